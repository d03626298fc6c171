package script

import (
	"path"
	"sort"
	"strconv"
	"strings"

	"github.com/fenced/fenced/reply"
)

// fakeEnv is a small in-memory Redis for the tests: strings, hashes and
// lists with millisecond deadlines at a fixed now, enough for the lock
// libraries' scripts. It records every command it runs.
type fakeEnv struct {
	now     int64 // ms
	strs    map[string]string
	hashes  map[string]map[string]string
	lists   map[string][]string
	expires map[string]int64 // absolute ms
	log     [][]string
	pubs    []string
}

func newFakeEnv() *fakeEnv {
	return &fakeEnv{
		now:     1_700_000_000_000,
		strs:    map[string]string{},
		hashes:  map[string]map[string]string{},
		lists:   map[string][]string{},
		expires: map[string]int64{},
	}
}

var (
	errWrongType = reply.Error("WRONGTYPE Operation against a key holding the wrong kind of value")
	errNotInt    = reply.Error("ERR value is not an integer or out of range")
	errSyntax    = reply.Error("ERR syntax error")
)

// arity: positive = exact, negative = at least.
var fakeArity = map[string]int{
	"get": 2, "set": -3, "del": -2, "exists": -2, "pexpire": -3, "expire": -3, "pttl": 2, "ttl": 2,
	"hset": -4, "hget": 3, "hincrby": 4, "hexists": 3, "hdel": -3, "hgetall": 2, "incr": 2,
	"mget": -2, "mset": -3, "msetnx": -3, "getrange": 4, "lpush": -3, "rpush": -3, "lpop": -2,
	"llen": 2, "keys": 2, "publish": 3, "ping": -1, "echo": 2, "type": 2, "eval": -3,
}

func (f *fakeEnv) exists(k string) bool {
	if d, ok := f.expires[k]; ok && d <= f.now {
		f.del(k)
	}
	_, s := f.strs[k]
	_, h := f.hashes[k]
	_, l := f.lists[k]
	return s || h || l
}

func (f *fakeEnv) del(k string) bool {
	_, s := f.strs[k]
	_, h := f.hashes[k]
	_, l := f.lists[k]
	delete(f.strs, k)
	delete(f.hashes, k)
	delete(f.lists, k)
	delete(f.expires, k)
	return s || h || l
}

// ACLCheck allows every command it knows but DEL.
func (f *fakeEnv) ACLCheck(args []string) (allowed, known bool) {
	name := strings.ToLower(args[0])
	_, known = fakeArity[name]
	return known && name != "del", known
}

func (f *fakeEnv) Call(args []string) reply.Value {
	f.log = append(f.log, append([]string(nil), args...))
	name := strings.ToLower(args[0])
	ar, ok := fakeArity[name]
	if !ok {
		return reply.Error(ErrUnknownCommand)
	}
	if ar > 0 && len(args) != ar || ar < 0 && len(args) < -ar {
		return reply.Error(ErrWrongArity)
	}
	switch name {
	case "eval":
		return reply.Error(ErrNotAllowed)
	case "ping":
		if len(args) > 1 {
			return reply.BulkString(args[1])
		}
		return reply.SimpleString("PONG")
	case "echo":
		return reply.BulkString(args[1])
	case "get":
		k := args[1]
		if !f.exists(k) {
			return reply.Null()
		}
		v, ok := f.strs[k]
		if !ok {
			return errWrongType
		}
		return reply.BulkString(v)
	case "set":
		return f.set(args)
	case "del":
		n := 0
		for _, k := range args[1:] {
			if f.exists(k) && f.del(k) {
				n++
			}
		}
		return reply.Int(int64(n))
	case "exists":
		n := 0
		for _, k := range args[1:] {
			if f.exists(k) {
				n++
			}
		}
		return reply.Int(int64(n))
	case "pexpire", "expire":
		n, err := strconv.ParseInt(args[2], 10, 64)
		if err != nil {
			return errNotInt
		}
		if name == "expire" {
			n *= 1000
		}
		if !f.exists(args[1]) {
			return reply.Int(0)
		}
		if n <= 0 {
			f.del(args[1])
		} else {
			f.expires[args[1]] = f.now + n
		}
		return reply.Int(1)
	case "pttl", "ttl":
		k := args[1]
		if !f.exists(k) {
			return reply.Int(-2)
		}
		d, ok := f.expires[k]
		if !ok {
			return reply.Int(-1)
		}
		ms := d - f.now
		if name == "ttl" {
			return reply.Int((ms + 500) / 1000)
		}
		return reply.Int(ms)
	case "type":
		k := args[1]
		switch {
		case !f.exists(k):
			return reply.SimpleString("none")
		case f.strs[k] != "" || f.hashes[k] == nil && f.lists[k] == nil:
			return reply.SimpleString("string")
		case f.hashes[k] != nil:
			return reply.SimpleString("hash")
		}
		return reply.SimpleString("list")
	case "incr":
		k := args[1]
		var n int64
		if f.exists(k) {
			v, ok := f.strs[k]
			if !ok {
				return errWrongType
			}
			var err error
			if n, err = strconv.ParseInt(v, 10, 64); err != nil {
				return errNotInt
			}
		}
		n++
		f.strs[k] = strconv.FormatInt(n, 10)
		return reply.Int(n)
	case "mget":
		var out []reply.Value
		for _, k := range args[1:] {
			if v, ok := f.strs[k]; ok && f.exists(k) {
				out = append(out, reply.BulkString(v))
			} else {
				out = append(out, reply.Null())
			}
		}
		return reply.Array(out...)
	case "mset", "msetnx":
		if len(args)%2 != 1 {
			return reply.Error("ERR wrong number of arguments for '" + name + "' command")
		}
		if name == "msetnx" {
			for i := 1; i < len(args); i += 2 {
				if f.exists(args[i]) {
					return reply.Int(0)
				}
			}
		}
		for i := 1; i < len(args); i += 2 {
			f.del(args[i])
			f.strs[args[i]] = args[i+1]
		}
		if name == "msetnx" {
			return reply.Int(1)
		}
		return reply.OK()
	case "getrange":
		v := ""
		if f.exists(args[1]) {
			var ok bool
			if v, ok = f.strs[args[1]]; !ok {
				return errWrongType
			}
		}
		start, err1 := strconv.ParseInt(args[2], 10, 64)
		end, err2 := strconv.ParseInt(args[3], 10, 64)
		if err1 != nil || err2 != nil {
			return errNotInt
		}
		n := int64(len(v))
		if start < 0 {
			start = max(n+start, 0)
		}
		if end < 0 {
			end = n + end
		}
		if end >= n {
			end = n - 1
		}
		if n == 0 || start > end {
			return reply.BulkString("")
		}
		return reply.BulkString(v[start : end+1])
	case "hset":
		if len(args)%2 != 0 {
			return reply.Error("ERR wrong number of arguments for 'hset' command")
		}
		h, err := f.hash(args[1], true)
		if err != nil {
			return *err
		}
		n := 0
		for i := 2; i < len(args); i += 2 {
			if _, ok := h[args[i]]; !ok {
				n++
			}
			h[args[i]] = args[i+1]
		}
		return reply.Int(int64(n))
	case "hget":
		h, err := f.hash(args[1], false)
		if err != nil {
			return *err
		}
		if v, ok := h[args[2]]; ok {
			return reply.BulkString(v)
		}
		return reply.Null()
	case "hexists":
		h, err := f.hash(args[1], false)
		if err != nil {
			return *err
		}
		if _, ok := h[args[2]]; ok {
			return reply.Int(1)
		}
		return reply.Int(0)
	case "hincrby":
		by, perr := strconv.ParseInt(args[3], 10, 64)
		if perr != nil {
			return errNotInt
		}
		h, err := f.hash(args[1], true)
		if err != nil {
			return *err
		}
		var n int64
		if v, ok := h[args[2]]; ok {
			if n, perr = strconv.ParseInt(v, 10, 64); perr != nil {
				return reply.Error("ERR hash value is not an integer")
			}
		}
		n += by
		h[args[2]] = strconv.FormatInt(n, 10)
		return reply.Int(n)
	case "hdel":
		h, err := f.hash(args[1], false)
		if err != nil {
			return *err
		}
		n := 0
		for _, fl := range args[2:] {
			if _, ok := h[fl]; ok {
				delete(h, fl)
				n++
			}
		}
		if len(h) == 0 {
			f.del(args[1])
		}
		return reply.Int(int64(n))
	case "hgetall":
		h, err := f.hash(args[1], false)
		if err != nil {
			return *err
		}
		fields := make([]string, 0, len(h))
		for k := range h {
			fields = append(fields, k)
		}
		sort.Strings(fields)
		var out []reply.Value
		for _, k := range fields {
			out = append(out, reply.BulkString(k), reply.BulkString(h[k]))
		}
		return reply.Map(out...)
	case "lpush", "rpush":
		k := args[1]
		if f.exists(k) && f.lists[k] == nil {
			return errWrongType
		}
		for _, v := range args[2:] {
			if name == "lpush" {
				f.lists[k] = append([]string{v}, f.lists[k]...)
			} else {
				f.lists[k] = append(f.lists[k], v)
			}
		}
		return reply.Int(int64(len(f.lists[k])))
	case "lpop":
		k := args[1]
		if !f.exists(k) {
			return reply.Null()
		}
		l, ok := f.lists[k]
		if !ok {
			return errWrongType
		}
		v := l[0]
		if len(l) == 1 {
			f.del(k)
		} else {
			f.lists[k] = l[1:]
		}
		return reply.BulkString(v)
	case "llen":
		if !f.exists(args[1]) {
			return reply.Int(0)
		}
		return reply.Int(int64(len(f.lists[args[1]])))
	case "keys":
		var ks []string
		for _, m := range []map[string]bool{f.keySet()} {
			for k := range m {
				if ok, _ := path.Match(args[1], k); ok {
					ks = append(ks, k)
				}
			}
		}
		sort.Strings(ks)
		out := []reply.Value{}
		for _, k := range ks {
			out = append(out, reply.BulkString(k))
		}
		return reply.Array(out...)
	case "publish":
		f.pubs = append(f.pubs, args[1]+"="+args[2])
		return reply.Int(0)
	}
	return reply.Error(ErrUnknownCommand)
}

func (f *fakeEnv) keySet() map[string]bool {
	m := map[string]bool{}
	for k := range f.strs {
		m[k] = true
	}
	for k := range f.hashes {
		m[k] = true
	}
	for k := range f.lists {
		m[k] = true
	}
	for k := range m {
		if !f.exists(k) {
			delete(m, k)
		}
	}
	return m
}

func (f *fakeEnv) hash(k string, create bool) (map[string]string, *reply.Value) {
	if f.exists(k) {
		h, ok := f.hashes[k]
		if !ok {
			return nil, &errWrongType
		}
		return h, nil
	}
	h := map[string]string{}
	if create {
		f.hashes[k] = h
	}
	return h, nil
}

func (f *fakeEnv) set(args []string) reply.Value {
	k, v := args[1], args[2]
	var nx, xx, keepttl bool
	var ttl int64 = -1
	for i := 3; i < len(args); i++ {
		switch strings.ToLower(args[i]) {
		case "nx":
			nx = true
		case "xx":
			xx = true
		case "keepttl":
			keepttl = true
		case "px", "ex":
			if i+1 >= len(args) {
				return errSyntax
			}
			n, err := strconv.ParseInt(args[i+1], 10, 64)
			if err != nil {
				return errNotInt
			}
			if n <= 0 {
				return reply.Error("ERR invalid expire time in 'set' command")
			}
			if strings.ToLower(args[i]) == "ex" {
				n *= 1000
			}
			ttl = n
			i++
		default:
			return errSyntax
		}
	}
	if nx && xx {
		return errSyntax
	}
	ex := f.exists(k)
	if nx && ex || xx && !ex {
		return reply.Null()
	}
	old, hadTTL := f.expires[k]
	f.del(k)
	f.strs[k] = v
	switch {
	case ttl > 0:
		f.expires[k] = f.now + ttl
	case keepttl && hadTTL:
		f.expires[k] = old
	}
	return reply.OK()
}
