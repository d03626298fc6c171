package server

import (
	"encoding/hex"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/fenced/fenced/acl"
	"github.com/fenced/fenced/commands"
	"github.com/fenced/fenced/internal/plant"
	"github.com/fenced/fenced/lockstate"
	"github.com/fenced/fenced/raftstore"
	"github.com/fenced/fenced/reply"
	"github.com/fenced/fenced/resp"
)

// The ACL refusals, with Redis 7.0's texts.
var (
	ErrNoPermCommand = reply.NewErr("NOPERM", "this user has no permissions to run the")
	ErrNoPermKey     = reply.NewErr("NOPERM", "this user has no permissions to access one of the keys used as arguments")
	ErrNoPermChannel = reply.NewErr("NOPERM", "this user has no permissions to access one of the channels used as arguments")
)

// permit is the dispatcher's ACL check of a command of an authenticated
// connection's user: the command (or subcommand) by its rules and
// categories, every key or lock name it names by the key patterns, every
// channel by the channel patterns. Commands from peers were checked by the
// node that took them from the client.
func (s *Server) permit(c *resp.Conn, spec *commands.Spec, args [][]byte) error {
	if spec.Has(commands.NoAuth) || fromPeer(c) {
		return nil
	}
	name := s.userOf(c)
	u, ok := s.auth.user(name)
	if !ok || !u.On {
		return ErrNoAuth // deleted or disabled since it authenticated
	}
	return s.check(c, u, spec, args)
}

// check is permit for user u, also behind ACL DRYRUN; a refusal is logged
// in ACL LOG (c is nil for a dry run, which logs nothing).
func (s *Server) check(c *resp.Conn, u *acl.User, spec *commands.Spec, args [][]byte) error {
	p := spec.PermOf(args)
	if plant.On(plant.AdminSkipped) && p.Cats&commands.CatAdmin != 0 {
		p.Cats &^= commands.CatAdmin | commands.CatDangerous // the planted bug
	}
	if !u.Can(p) {
		s.aclLog.add(c, u.Name, "command", p.Name)
		return fmt.Errorf("%w '%s' command", ErrNoPermCommand, p.Name)
	}
	for _, k := range spec.KeysOf(args) {
		if !u.CanKey(string(k)) {
			s.aclLog.add(c, u.Name, "key", string(k))
			return ErrNoPermKey
		}
	}
	if (spec.Name == "sort" || spec.Name == "sort_ro") && !u.AllKeys() {
		if err := commands.SortReachesKeys(args); err != nil {
			return err // Redis's own -ERR, not NOPERM
		}
	}
	for _, ch := range channelsOf(spec, args) {
		if !u.CanChannel(string(ch)) {
			s.aclLog.add(c, u.Name, "channel", string(ch))
			return ErrNoPermChannel
		}
	}
	if spec.Name == "psubscribe" {
		for _, p := range args[1:] {
			if !u.CanPattern(string(p)) {
				s.aclLog.add(c, u.Name, "channel", string(p))
				return ErrNoPermChannel
			}
		}
	}
	return nil
}

// channelsOf returns the channels a pub/sub command names; leaving a
// channel (UNSUBSCRIBE) is always allowed.
func channelsOf(spec *commands.Spec, args [][]byte) [][]byte {
	switch spec.Name {
	case "publish":
		return args[1:2]
	case "subscribe":
		return args[1:]
	}
	return nil
}

// actor is who an entry acts for: the connection's user ("" for the
// default user, whose entries keep the bytes they had before users), and
// whether it may act on anyone's session (the admin category).
func (s *Server) actor(c *resp.Conn) (user string, admin bool) {
	name := s.userOf(c)
	if u, ok := s.auth.user(name); ok {
		admin = u.Can(commands.Perm{Cats: commands.CatAdmin})
	}
	if name == acl.DefaultUser {
		name = ""
	}
	return name, admin
}

// acl implements ACL SETUSER, DELUSER, GETUSER, LIST, USERS, WHOAMI, CAT,
// DRYRUN and LOG.
func (s *Server) aclCmd(c *resp.Conn, args [][]byte) resp.Value {
	sub := strings.ToLower(string(args[1]))
	rest := args[2:]
	arity := func(min int, exact bool) bool {
		return len(rest) >= min && (!exact || len(rest) == min)
	}
	switch sub {
	case "whoami":
		if !arity(0, true) {
			break
		}
		return resp.BulkString(s.userOf(c))
	case "cat":
		if !arity(0, false) || len(rest) > 1 {
			break
		}
		if len(rest) == 0 {
			return bulkStrings(commands.CatNames())
		}
		cat, ok := commands.CatByName(string(rest[0]))
		if !ok || cat == commands.CatAll {
			return resp.Error("ERR Unknown category '" + commands.Clip(rest[0]) + "'")
		}
		var names []string
		for _, spec := range s.table.All() {
			if spec.Cats&cat != 0 {
				names = append(names, spec.Name)
			}
		}
		return bulkStrings(names)
	case "setuser":
		if !arity(1, false) {
			break
		}
		rules := make([]string, len(rest)-1)
		for i, r := range rest[1:] {
			if err := s.table.CheckACLRule(string(r)); err != nil {
				return errorReply(err)
			}
			rules[i] = acl.HashRule(string(r)) // no password reaches the log
		}
		name := string(rest[0])
		if name == "" || strings.ContainsAny(name, " \t\r\n") {
			return resp.Error("ERR Usernames can't contain spaces or null characters")
		}
		if _, recorded := s.users.get(name); name == acl.DefaultUser && !recorded && s.auth.pass != nil {
			// The default user's first record starts from the state
			// machine's default (no password): carry --requirepass into it,
			// or changing any rule of the default user would drop the
			// password and open the cluster.
			rules = append([]string{"#" + hex.EncodeToString(s.auth.pass[:])}, rules...)
		}
		user, admin := s.actor(c)
		res, err := s.submit(c.Context(), lockstate.Entry{Op: lockstate.OpACLSetUser, Name: name, Args: rules, User: user, AsAdmin: admin})
		return answer(res, err, func(r lockstate.Result) resp.Value {
			if r.Err != nil {
				return errorReply(r.Err)
			}
			return resp.SimpleString("OK") // Redis's reply, where resultReply would say 0
		})
	case "deluser":
		if !arity(1, false) {
			break
		}
		names := make([]string, len(rest))
		for i, r := range rest {
			names[i] = string(r)
		}
		user, admin := s.actor(c)
		return s.propose(c.Context(), lockstate.Entry{Op: lockstate.OpACLDelUser, Args: names, User: user, AsAdmin: admin})
	case "getuser":
		if !arity(1, true) {
			break
		}
		u, ok := s.auth.user(string(rest[0]))
		if !ok {
			return resp.Null()
		}
		return userReply(u)
	case "list", "users":
		if !arity(0, true) {
			break
		}
		names := s.userNames()
		if sub == "users" {
			return bulkStrings(names)
		}
		out := make([]string, 0, len(names))
		for _, n := range names {
			if u, ok := s.auth.user(n); ok {
				out = append(out, u.Rules())
			}
		}
		return bulkStrings(out)
	case "dryrun":
		if !arity(2, false) {
			break
		}
		u, ok := s.auth.user(string(rest[0]))
		if !ok {
			return resp.Error("ERR User '" + commands.Clip(rest[0]) + "' not found")
		}
		spec, err := s.table.Check(rest[1:])
		if err != nil {
			return resp.Error("ERR Command '" + commands.Clip(rest[1]) + "' not found")
		}
		if err := s.check(nil, u, spec, rest[1:]); err != nil {
			// DRYRUN says why, in Redis's words, as a reply, not an error.
			return resp.BulkString(strings.TrimPrefix(err.Error(), "NOPERM "))
		}
		return resp.SimpleString("OK")
	case "log":
		if len(rest) > 1 {
			break
		}
		if len(rest) == 1 && strings.EqualFold(string(rest[0]), "reset") {
			s.aclLog.reset()
			return resp.SimpleString("OK")
		}
		n := -1
		if len(rest) == 1 {
			v, err := strconv.Atoi(string(rest[0]))
			if err != nil || v < 0 {
				return resp.Error("ERR value is out of range, must be positive")
			}
			n = v
		}
		return s.aclLog.reply(n)
	case "help":
		if len(rest) > 0 {
			break
		}
		return helpReply(
			"ACL <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
			"CAT [<category>]", "    List all commands that belong to <category>, or all command categories.",
			"DELUSER <username> [<username> ...]", "    Delete a list of users (replicated).",
			"DRYRUN <username> <command> [<arg> ...]", "    Returns whether the user can execute the given command without executing the command.",
			"GETUSER <username>", "    Get the user's details.",
			"LIST", "    Show users details in config file format.",
			"LOG [<count> | RESET]", "    Show the ACL log entries.",
			"SETUSER <username> <attribute> [<attribute> ...]", "    Create or modify a user with the specified attributes (replicated).",
			"USERS", "    List all the registered usernames.",
			"WHOAMI", "    Return the current connection username.",
			"HELP", "    Print this help.",
		)
	default:
		return resp.Error("ERR unknown subcommand '" + commands.Clip(args[1]) + "'. Try ACL HELP.")
	}
	return resp.Error("ERR wrong number of arguments for 'acl|" + sub + "' command")
}

// userNames lists every user: those with a record, and default.
func (s *Server) userNames() []string {
	var names []string
	s.node.Local(func(st *lockstate.State) { names = st.Users() })
	found := false
	for _, n := range names {
		found = found || n == acl.DefaultUser
	}
	if !found {
		names = append(names, acl.DefaultUser)
		sort.Strings(names)
	}
	return names
}

func userReply(u *acl.User) resp.Value {
	flags := []string{"off"}
	if u.On {
		flags[0] = "on"
	}
	if u.NoPass {
		flags = append(flags, "nopass")
	}
	keys := make([]string, len(u.Keys))
	for i, k := range u.Keys {
		keys[i] = "~" + k
	}
	chans := make([]string, len(u.Channels))
	for i, ch := range u.Channels {
		chans[i] = "&" + ch
	}
	return resp.Map(
		resp.BulkString("flags"), bulkStrings(flags),
		resp.BulkString("passwords"), bulkStrings(u.Passwords),
		resp.BulkString("commands"), resp.BulkString(strings.Join(u.Commands, " ")),
		resp.BulkString("keys"), resp.BulkString(strings.Join(keys, " ")),
		resp.BulkString("channels"), resp.BulkString(strings.Join(chans, " ")),
	)
}

func bulkStrings(ss []string) resp.Value {
	vs := make([]resp.Value, len(ss))
	for i, s := range ss {
		vs[i] = resp.BulkString(s)
	}
	return resp.Array(vs...)
}

// aclLog keeps this node's recent ACL refusals for ACL LOG, newest first,
// as Redis keeps them per server.
type aclLog struct {
	mu      sync.Mutex
	entries []aclLogEntry
}

type aclLogEntry struct {
	count            int
	reason, object   string
	user, clientInfo string
	created, updated time.Time
}

const aclLogMax = 128

func (l *aclLog) add(c *resp.Conn, user, reason, object string) {
	if c == nil {
		return
	}
	info := fmt.Sprintf("id=%d addr=%s", c.ID(), c.RemoteAddr())
	now := time.Now()
	l.mu.Lock()
	defer l.mu.Unlock()
	for i, e := range l.entries {
		if e.user == user && e.reason == reason && e.object == object {
			e.count++
			e.updated, e.clientInfo = now, info
			copy(l.entries[1:i+1], l.entries[:i])
			l.entries[0] = e
			return
		}
	}
	l.entries = append([]aclLogEntry{{count: 1, reason: reason, object: object, user: user, clientInfo: info, created: now, updated: now}}, l.entries...)
	if len(l.entries) > aclLogMax {
		l.entries = l.entries[:aclLogMax]
	}
}

func (l *aclLog) reset() {
	l.mu.Lock()
	l.entries = nil
	l.mu.Unlock()
}

func (l *aclLog) reply(n int) resp.Value {
	l.mu.Lock()
	defer l.mu.Unlock()
	if n < 0 {
		n = 10
	}
	n = min(n, len(l.entries))
	vs := make([]resp.Value, n)
	for i, e := range l.entries[:n] {
		vs[i] = resp.Map(
			resp.BulkString("count"), resp.Int(int64(e.count)),
			resp.BulkString("reason"), resp.BulkString(e.reason),
			resp.BulkString("context"), resp.BulkString("toplevel"),
			resp.BulkString("object"), resp.BulkString(e.object),
			resp.BulkString("username"), resp.BulkString(e.user),
			resp.BulkString("age-seconds"), resp.BulkString(strconv.FormatFloat(time.Since(e.created).Seconds(), 'f', 3, 64)),
			resp.BulkString("client-info"), resp.BulkString(e.clientInfo),
		)
	}
	return resp.Array(vs...)
}

// userCache is this node's copy of the replicated users, refreshed after
// every applied entry that changed them (Applied, Restored), so that
// checking a command costs no lock on the state.
type userCache struct {
	m atomic.Pointer[map[string]*acl.User]
	// node is set once the node is open: entries may be applied (and
	// Applied called) while raftstore.Open is still running.
	node atomic.Pointer[raftstore.Node]
}

// reload refreshes from the node's state, once there is a node.
func (uc *userCache) reload() {
	if n := uc.node.Load(); n != nil {
		n.Local(uc.refresh)
	}
}

func (uc *userCache) get(name string) (*acl.User, bool) {
	m := uc.m.Load()
	if m == nil {
		return nil, false
	}
	u, ok := (*m)[name]
	return u, ok
}

// refresh reads the users from st.
func (uc *userCache) refresh(st *lockstate.State) {
	m := make(map[string]*acl.User)
	for _, n := range st.Users() {
		if u, ok := st.User(n); ok {
			m[n] = u
		}
	}
	uc.m.Store(&m)
}

// raftUser is RAFT.USER name, on a link: the commands that follow on it
// act for that user of the forwarding node's client (forwardRaw), so a
// read the leader answers sees what that user may see.
func (s *Server) raftUser(c *resp.Conn, args [][]byte) resp.Value {
	stateOf(c).user = string(args[1])
	return resp.SimpleString("OK")
}
