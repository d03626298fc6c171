package acl

import (
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/fenced/fenced/commands"
)

func perm(t *testing.T, tb *commands.Table, cmd string) commands.Perm {
	t.Helper()
	args := [][]byte{}
	for _, f := range strings.Fields(cmd) {
		args = append(args, []byte(f))
	}
	s, err := tb.Check(args)
	if err != nil {
		t.Fatalf("%s: %v", cmd, err)
	}
	return s.PermOf(args)
}

func TestCanFollowsRuleOrder(t *testing.T) {
	tb := commands.New()
	u := New("alice")
	u.Apply([]string{"on", ">pw", "+@all", "-@admin", "+client|list", "-flock"})
	for cmd, want := range map[string]bool{
		"GET k": true, "SET k v": true, "FUNLOCK l s": true, "FLOCK l s": false,
		"RAFT.STATUS": false, "KEYS *": false, "SESSION.LIST": false, "LOCK.FORCEUNLOCK l 1": false,
		"CLIENT LIST": true, "CLIENT KILL ID 1": false, "CLIENT SETNAME x": true, "SCRIPT FLUSH": false, "SCRIPT LOAD x": true,
	} {
		if got := u.Can(perm(t, tb, cmd)); got != want {
			t.Errorf("%s: Can = %v, want %v (rules %v)", cmd, got, want, u.Commands)
		}
	}
	if New("bob").Can(perm(t, tb, "PING")) {
		t.Error("a new user may run PING")
	}
	if !Default("").Can(perm(t, tb, "RAFT.STATUS")) {
		t.Error("the default user may not run an admin command")
	}
}

func TestPasswords(t *testing.T) {
	u := New("alice")
	u.Apply([]string{">one", ">two"})
	if u.CheckPassword("one") {
		t.Error("a user that is off accepted a password")
	}
	u.Apply([]string{"on"})
	if !u.CheckPassword("one") || !u.CheckPassword("two") || u.CheckPassword("three") || u.CheckPassword("") {
		t.Error("passwords one and two, and only they, must be accepted")
	}
	u.Apply([]string{"<one"})
	if u.CheckPassword("one") || !u.CheckPassword("two") {
		t.Error("<one did not remove one alone")
	}
	for _, p := range u.Passwords {
		if strings.Contains(p, "two") || len(p) != 64 {
			t.Errorf("stored password %q is not a SHA-256", p)
		}
	}
	u.Apply([]string{"nopass"})
	if !u.CheckPassword("anything") || len(u.Passwords) != 0 {
		t.Error("nopass must accept any password and keep none")
	}
	u.Apply([]string{"resetpass"})
	if u.CheckPassword("anything") {
		t.Error("resetpass must leave no way in")
	}
	if got := HashRule(">secret"); got != "#"+HashPassword("secret") || strings.Contains(got, "secret") {
		t.Errorf("HashRule(>secret) = %q", got)
	}
}

func TestKeysAndChannels(t *testing.T) {
	u := New("alice")
	u.Apply([]string{"~lock:*", "~app:?", "&events.*"})
	for key, want := range map[string]bool{"lock:1": true, "lock:": true, "app:1": true, "app:12": false, "other": false} {
		if u.CanKey(key) != want {
			t.Errorf("CanKey(%q) = %v", key, !want)
		}
	}
	if !u.CanChannel("events.x") || u.CanChannel("other") {
		t.Error("channel patterns")
	}
	u.Apply([]string{"allkeys", "resetchannels"})
	if !u.CanKey("anything") || u.CanChannel("events.x") {
		t.Error("allkeys / resetchannels")
	}
	u.Apply([]string{"reset"})
	if !reflect.DeepEqual(u, New("alice")) {
		t.Errorf("reset left %+v", u)
	}
}

// Rules describes a user so that applying it to a new user gives the same
// user back.
func TestRulesRoundTrip(t *testing.T) {
	for _, rules := range [][]string{
		{"on", ">a", ">b", "~k:*", "&c", "+@all", "-@admin", "+client|list"},
		{"off", "nopass", "allkeys", "allchannels", "-@all", "+get"},
		{},
	} {
		u := New("u")
		u.Apply(rules)
		checkRoundTrip(t, u)
	}
	checkRoundTrip(t, Default(""))
	checkRoundTrip(t, Default(HashPassword("pw")))
}

func checkRoundTrip(t *testing.T, u *User) {
	t.Helper()
	f := strings.Fields(u.Rules())
	if f[0] != "user" || f[1] != u.Name {
		t.Fatalf("Rules() = %q", u.Rules())
	}
	v := New(u.Name)
	v.Apply(append([]string{"reset"}, f[2:]...))
	if !reflect.DeepEqual(u, v) {
		t.Errorf("Rules() %q applied gives %+v, want %+v", u.Rules(), v, u)
	}
}

// FuzzSetUserRules: any rules that pass the table's check apply without
// panicking, keep the user canonical, and describe it exactly.
func FuzzSetUserRules(f *testing.F) {
	for _, s := range []string{"on >pw +@all -@admin ~k:* &c", "reset nopass allkeys", "+client|list -@all", "#" + strings.Repeat("a", 64), "<x !" + strings.Repeat("0", 64)} {
		f.Add(s)
	}
	tb := commands.New()
	f.Fuzz(func(t *testing.T, in string) {
		var rules []string
		for _, r := range strings.Fields(in) {
			if tb.CheckACLRule(r) == nil {
				rules = append(rules, r)
			}
		}
		u := New("u")
		u.Apply(rules)
		if !slices.IsSorted(u.Passwords) || len(slices.Compact(slices.Clone(u.Passwords))) != len(u.Passwords) {
			t.Fatalf("passwords not sorted and unique: %v", u.Passwords)
		}
		for _, p := range u.Passwords {
			if len(p) != 64 {
				t.Fatalf("password %q is not a hash", p)
			}
		}
		if strings.ContainsAny(strings.Join(u.Keys, "")+strings.Join(u.Channels, ""), " \t\r\n") {
			return // a pattern with white space cannot be described on one line
		}
		checkRoundTrip(t, u)
	})
}
