package lockstate

import (
	"slices"
	"strings"

	"github.com/fenced/fenced/acl"
	"github.com/fenced/fenced/commands"
	"github.com/fenced/fenced/internal/plant"
	"github.com/fenced/fenced/reply"
)

// ErrDefaultUser refuses ACL DELUSER default, as Redis does.
var ErrDefaultUser = reply.NewErr("ERR", "The 'default' user cannot be removed")

// setUser is OpACLSetUser: the rules in e.Args applied, in order, to user
// e.Name, which is created if new. The default user starts from what it is
// without a record: the server's (acl.Default with no password); a cluster
// whose default user has a password sets it with an entry of its own.
func (s *State) setUser(e Entry) Result {
	if e.Name == "" || strings.ContainsAny(e.Name, " \t\r\n") {
		return Result{Err: ErrBadEntry}
	}
	u := s.users[e.Name]
	switch {
	case u != nil:
		u = u.Clone()
	case e.Name == acl.DefaultUser:
		u = acl.Default("")
	default:
		u = acl.New(e.Name)
	}
	u.Apply(e.Args)
	s.users[e.Name] = u
	s.markDirty(userKey(e.Name), nil)
	return Result{UsersChanged: true}
}

// delUsers is OpACLDelUser: Result.Int counts the users deleted. Their
// sessions live on until their TTL ends them (a deleted user cannot
// authenticate to renew them), still usable by no other user.
func (s *State) delUsers(e Entry) Result {
	if slices.Contains(e.Args, acl.DefaultUser) {
		return Result{Err: ErrDefaultUser}
	}
	n := 0
	for _, name := range e.Args {
		if s.users[name] != nil {
			delete(s.users, name)
			s.markDirty(userKey(name), nil)
			n++
		}
	}
	return Result{Int: int64(n), UsersChanged: n > 0}
}

// User returns a copy of the record of user name, if ACL SETUSER made one.
func (s *State) User(name string) (*acl.User, bool) {
	u := s.users[name]
	if u == nil {
		return nil, false
	}
	return u.Clone(), true
}

// Users returns the names of the users with a record, sorted.
func (s *State) Users() []string {
	names := make([]string, 0, len(s.users))
	for n := range s.users {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// SessionUser returns the user that opened session id.
func (s *State) SessionUser(id string) (string, bool) {
	ss := s.sessions[id]
	if ss == nil {
		return "", false
	}
	return ss.user, true
}

// sessionFor returns session id if e's user may use it: its own, or any
// for an admin entry. Another user's session is as good as absent.
func (s *State) sessionFor(e Entry) *session {
	ss := s.sessions[e.Session]
	if plant.On(plant.OwnershipIgnored) {
		return ss // the planted bug: any user's entry uses any session
	}
	if ss == nil || ss.user != e.User && !e.AsAdmin {
		return nil
	}
	return ss
}

// ErrScriptNoPerm refuses a redis.call that the script's user may not make
// (Redis 7's text for a command refused inside a script).
var ErrScriptNoPerm = reply.NewErr("NOPERM", "The user executing the script can't run this command or subcommand")

// ErrScriptNoKeyPerm refuses a redis.call on a key the user may not access.
var ErrScriptNoKeyPerm = reply.NewErr("NOPERM", "The user executing the script can't access at least one of the keys mentioned in the command")

// permittedAs checks a command a script of user ("" = default) calls, as
// the server checks the commands a client sends: every key a script
// touches is held to the user's key patterns, whatever KEYS it declared.
// The default user without a record may do anything. The user is the
// entry's, or for a read-only script run outside the log its connection's.
func (s *State) permittedAs(user string, spec *commands.Spec, args [][]byte) error {
	return s.permittedKeys(user, spec, args, spec.KeysOf(args))
}

// permittedKeys is permittedAs with the keys given: none where args do not
// fit the command's arity (redis.acl_check_cmd), so KeysOf cannot tell.
func (s *State) permittedKeys(user string, spec *commands.Spec, args, keys [][]byte) error {
	name := user
	if name == "" {
		name = acl.DefaultUser
	}
	u := s.users[name]
	if u == nil {
		if name == acl.DefaultUser {
			return nil
		}
		return ErrScriptNoPerm // deleted since it was checked
	}
	if !u.Can(spec.PermOf(args)) {
		return ErrScriptNoPerm
	}
	for _, k := range keys {
		if !u.CanKey(string(k)) {
			return ErrScriptNoKeyPerm
		}
	}
	if (spec.Name == "sort" || spec.Name == "sort_ro") && !u.AllKeys() {
		return commands.SortReachesKeys(args)
	}
	return nil
}
