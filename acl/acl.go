// Package acl owns the cluster's users and what each may run: Redis 7's ACL
// model (users with passwords and key, channel and command rules), applied
// rule by rule as ACL SETUSER applies them. It is pure: the state machine
// keeps the users, replicated through Raft like etcd's auth store, the
// server checks every command against them, and the state machine checks
// what scripts run through redis.call.
package acl

import (
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"slices"
	"strings"

	"github.com/fenced/fenced/commands"
	"github.com/fenced/fenced/internal/glob"
)

// DefaultUser is the user a connection is until it authenticates as
// another, and the one a password alone (AUTH pass) names.
const DefaultUser = "default"

// User is one ACL user. Its fields are canonical (sorted where order does
// not matter, rules in the order they apply), so equal users encode alike.
type User struct {
	Name      string
	On        bool
	NoPass    bool
	Passwords []string // SHA-256 of each password, lowercase hex, sorted
	Keys      []string // key patterns (~), in the order added
	Channels  []string // channel patterns (&), in the order added
	Commands  []string // command rules (+@cat, -cmd, +cmd|sub), lower case, in order
}

// New returns a user as ACL SETUSER creates one: off, no password, no keys,
// no channels, no commands.
func New(name string) *User {
	return &User{Name: name, Commands: []string{"-@all"}}
}

// Default returns the default user of a cluster that has no record of it:
// every command, key and channel, with the password whose hash is passHash,
// or none ("" = nopass), as Redis's default user.
func Default(passHash string) *User {
	u := &User{Name: DefaultUser, On: true, Keys: []string{"*"}, Channels: []string{"*"}, Commands: []string{"+@all"}}
	if passHash == "" {
		u.NoPass = true
	} else {
		u.Passwords = []string{passHash}
	}
	return u
}

// HashPassword is the SHA-256 of a password, in lowercase hex: all that is
// ever stored or replicated.
func HashPassword(pass string) string {
	sum := sha256.Sum256([]byte(pass))
	return hex.EncodeToString(sum[:])
}

// HashRule rewrites a rule that carries a password in clear (>pass,
// <pass) into the one that carries its hash (#hash, !hash), so that no
// password reaches the log. Other rules are returned as they are.
func HashRule(rule string) string {
	switch {
	case strings.HasPrefix(rule, ">"):
		return "#" + HashPassword(rule[1:])
	case strings.HasPrefix(rule, "<"):
		return "!" + HashPassword(rule[1:])
	}
	return rule
}

// Clone returns a deep copy of u.
func (u *User) Clone() *User {
	c := *u
	c.Passwords = slices.Clone(u.Passwords)
	c.Keys = slices.Clone(u.Keys)
	c.Channels = slices.Clone(u.Channels)
	c.Commands = slices.Clone(u.Commands)
	return &c
}

// Apply applies rules in order, as ACL SETUSER does. Rules must have passed
// commands.Table.CheckACLRule; one it does not know is skipped, so every
// replica applies the same entry alike.
func (u *User) Apply(rules []string) {
	for _, r := range rules {
		u.apply(HashRule(r))
	}
	// Empty lists are nil, one form for one user.
	for _, l := range []*[]string{&u.Passwords, &u.Keys, &u.Channels, &u.Commands} {
		if len(*l) == 0 {
			*l = nil
		}
	}
}

func (u *User) apply(r string) {
	switch low := strings.ToLower(r); low {
	case "on":
		u.On = true
	case "off":
		u.On = false
	case "nopass":
		u.NoPass, u.Passwords = true, nil
	case "resetpass":
		u.NoPass, u.Passwords = false, nil
	case "allkeys":
		u.Keys = []string{"*"}
	case "resetkeys":
		u.Keys = nil
	case "allchannels":
		u.Channels = []string{"*"}
	case "resetchannels":
		u.Channels = nil
	case "allcommands", "+@all":
		u.Commands = []string{"+@all"}
	case "nocommands", "-@all":
		u.Commands = []string{"-@all"}
	case "reset":
		*u = *New(u.Name)
	default:
		if r == "" {
			return
		}
		switch r[0] {
		case '#':
			h := strings.ToLower(r[1:])
			if i, found := slices.BinarySearch(u.Passwords, h); !found {
				u.Passwords = slices.Insert(u.Passwords, i, h)
			}
			u.NoPass = false
		case '!':
			if i, found := slices.BinarySearch(u.Passwords, strings.ToLower(r[1:])); found {
				u.Passwords = slices.Delete(u.Passwords, i, i+1)
			}
		case '~':
			if !slices.Contains(u.Keys, r[1:]) {
				u.Keys = append(u.Keys, r[1:])
			}
		case '&':
			if !slices.Contains(u.Channels, r[1:]) {
				u.Channels = append(u.Channels, r[1:])
			}
		case '+', '-':
			u.Commands = append(u.Commands, low)
		}
	}
}

// CheckPassword reports whether pass is one of u's passwords (any, with
// nopass), comparing hashes in constant time. A user that is off accepts
// none.
func (u *User) CheckPassword(pass string) bool {
	if !u.On {
		return false
	}
	if u.NoPass {
		return true
	}
	h := []byte(HashPassword(pass))
	ok := 0
	for _, p := range u.Passwords {
		ok |= subtle.ConstantTimeCompare(h, []byte(p))
	}
	return ok == 1
}

// Can reports whether u may run a command that needs p. The rules apply in
// order and the last that matches decides: +@all -@admin +client|list
// allows CLIENT LIST and no other admin command.
func (u *User) Can(p commands.Perm) bool {
	allowed := false
	base, _, _ := strings.Cut(p.Name, "|")
	for _, r := range u.Commands {
		allow, what := r[0] == '+', r[1:]
		if cat, ok := strings.CutPrefix(what, "@"); ok {
			if c, known := commands.CatByName(cat); known && p.Cats&c != 0 {
				allowed = allow
			}
			continue
		}
		if what == p.Name || what == base {
			allowed = allow
		}
	}
	return allowed
}

// CanKey reports whether a key pattern (~) of u covers key, which may be a
// key or a lock name.
func (u *User) CanKey(key string) bool { return matchAny(u.Keys, key) }

// AllKeys reports whether u may use every key (~* or allkeys): what SORT's
// BY and GET patterns need, since the keys they reach are not named.
func (u *User) AllKeys() bool { return slices.Contains(u.Keys, "*") }

// CanChannel reports whether a channel pattern (&) of u covers channel.
func (u *User) CanChannel(channel string) bool { return matchAny(u.Channels, channel) }

// CanPattern reports whether u may subscribe to the channel pattern p
// (PSUBSCRIBE): as in Redis 7.0, a pattern is compared with the channel
// patterns as text, not matched, so only the same pattern or & * allows it.
func (u *User) CanPattern(p string) bool {
	return slices.Contains(u.Channels, "*") || slices.Contains(u.Channels, p)
}

func matchAny(patterns []string, s string) bool {
	for _, p := range patterns {
		// An empty name matched every all-star pattern before glob
		// followed Redis to the letter (Redis denies "**" on ""): kept,
		// since scripts check keys inside the log, where no answer may
		// change under a running cluster.
		if p == "*" || glob.Match(p, s) || s == "" && glob.AllStars(p) {
			return true
		}
	}
	return false
}

// Rules describes u as ACL LIST does: "user NAME on|off [nopass] #hash...
// ~pattern... &pattern... +@all ...", canonical, so it can be applied again.
func (u *User) Rules() string {
	var b strings.Builder
	b.WriteString("user ")
	b.WriteString(u.Name)
	if u.On {
		b.WriteString(" on")
	} else {
		b.WriteString(" off")
	}
	if u.NoPass {
		b.WriteString(" nopass")
	}
	for _, p := range u.Passwords {
		b.WriteString(" #" + p)
	}
	if slices.Equal(u.Keys, []string{"*"}) {
		b.WriteString(" ~*")
	} else {
		for _, k := range u.Keys {
			b.WriteString(" ~" + k)
		}
	}
	if len(u.Channels) == 0 {
		b.WriteString(" resetchannels")
	}
	for _, c := range u.Channels {
		b.WriteString(" &" + c)
	}
	for _, c := range u.Commands {
		b.WriteString(" " + c)
	}
	return b.String()
}
