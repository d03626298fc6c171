package lockstate

import (
	"testing"

	"github.com/fenced/fenced/reply"
	"github.com/fenced/fenced/script"
)

// Redis's blocking commands (BLMOVE and BRPOPLPUSH, and those fenced
// lacks) are refused in a script as Redis refuses them (noscript, after
// the arity) from cluster version 3; before, they are unknown, as an older
// binary answers.
func TestScriptRedisBlockingRefused(t *testing.T) {
	call := func(c *execCheck, args string) reply.Value {
		return c.exec(t, "EVAL", "return redis.pcall("+args+")", "0")
	}
	notAllowed := reply.Error("ERR This Redis command is not allowed from script")
	c3, c2 := newExecCheckAt(3), newExecCheckAt(2)
	for _, args := range []string{"'brpop', 'l', 0", "'BRPOPLPUSH', 'a', 'b', 0", "'blmove', 'a', 'b', 'LEFT', 'LEFT', 0", "'bzpopmin', 'z', 0", "'bzpopmax', 'z', 0"} {
		wantReply(t, args+" at 3", call(c3, args), notAllowed)
		wantReply(t, args+" at 2", call(c2, args), reply.Error("ERR Unknown Redis command called from script"))
	}
	wantReply(t, "brpop with too few arguments", call(c3, "'brpop', 'l'"), reply.Error("ERR Wrong number of args calling Redis command from script"))
	wantReply(t, "blmove with too many", call(c3, "'blmove', 'a', 'b', 'LEFT', 'LEFT', 0, 1"), reply.Error("ERR Wrong number of args calling Redis command from script"))
	wantReply(t, "an unknown command", call(c3, "'bpop', 'l', 0"), reply.Error("ERR Unknown Redis command called from script"))
}

// PING runs in a script from cluster version 3 (Redis's "shared function
// can access default globals" calls it), with PING's own replies.
func TestScriptPing(t *testing.T) {
	c3, c2 := newExecCheckAt(3), newExecCheckAt(2)
	wantReply(t, "ping", c3.exec(t, "EVAL", "return redis.call('ping')", "0"), reply.SimpleString("PONG"))
	wantReply(t, "ping msg", c3.exec(t, "EVAL", "return redis.call('PING', 'asdf')", "0"), reply.BulkString("asdf"))
	wantReply(t, "ping a b", c3.exec(t, "EVAL", "return redis.pcall('ping', 'a', 'b')", "0"), reply.Error("ERR wrong number of arguments for 'ping' command"))
	wantReply(t, "ping at 2", c2.exec(t, "EVAL", "return redis.pcall('ping')", "0"), reply.Error("ERR This Redis command is not allowed from script"))
}

// redis.acl_check_cmd answers for the entry's user by its ACL rules, keys
// included (Redis's "Script ACL check").
func TestScriptACLCheckCmd(t *testing.T) {
	c := newExecCheckAt(3)
	if r, err := c.apply(Entry{Op: OpACLSetUser, Name: "bob", Args: []string{"on", ">123", "+@scripting", "+set", "~x*"}}); err != nil || r.Err != nil {
		t.Fatal(r, err)
	}
	as := func(src string, keys ...string) reply.Value {
		args := append([]string{"EVAL", src, "0"}, keys...)
		if len(keys) > 0 {
			args[2] = "1"
		}
		r, err := c.apply(Entry{Op: OpExec, User: "bob", Args: args})
		if err != nil {
			t.Fatal(err)
		}
		return r.Reply
	}
	wantReply(t, "granted", as("return redis.acl_check_cmd('set','xx',1)", "xx"), reply.Int(1))
	wantReply(t, "command denied", as("return redis.acl_check_cmd('hset','xx','f',1)", "xx"), reply.Null())
	wantReply(t, "key denied", as("return redis.acl_check_cmd('set','yy',1)"), reply.Null())
	wantReply(t, "arity unknown: the command alone", as("return redis.acl_check_cmd('set')"), reply.Int(1))
	src := "return redis.acl_check_cmd('invalid-cmd','arg')"
	wantReply(t, "unknown", as(src), reply.Error("ERR Invalid command passed to redis.acl_check_cmd() script: "+script.SHA1(src)+", on @user_script:1."))
	// The default user may do anything.
	wantReply(t, "default user", c.exec(t, "EVAL", "return redis.acl_check_cmd('hset','yy','f',1)", "0"), reply.Int(1))
}
