package commands

import (
	"fmt"
	"github.com/fenced/fenced/reply"
	"strings"

	"github.com/fenced/fenced/internal/ms"
)

// Errors of the keyspace parsers, in Redis's words.
var (
	// ErrInvalidExpire is wrapped with the command's name: "invalid expire
	// time in 'set' command".
	ErrInvalidExpire = reply.NewErr("ERR", "invalid expire time")
	// ErrExpireNX and ErrExpireGTLT are EXPIRE's incompatible options.
	ErrExpireNX   = reply.NewErr("ERR", "NX and XX, GT or LT options at the same time are not compatible")
	ErrExpireGTLT = reply.NewErr("ERR", "GT and LT options at the same time are not compatible")
	// ErrUnsupportedOption is EXPIRE's unknown option, followed by it.
	ErrUnsupportedOption = reply.NewErr("ERR", "Unsupported option")
)

func invalidExpire(cmd string) error {
	return fmt.Errorf("%w in '%s' command", ErrInvalidExpire, cmd)
}

func arityOf(cmd string) error {
	return fmt.Errorf("%w for '%s' command", ErrArity, cmd)
}

// SetExpire is the expiry option of SET.
type SetExpire uint8

// The expiry options of SET. EXAT and PXAT are Unix times, which the state
// machine measures against the wall clock in the entry.
const (
	SetNoExpire SetExpire = iota
	SetEX
	SetPX
	SetEXAT
	SetPXAT
	SetKeepTTL
)

// setExpireOpt names SET's expiry option opt (upper case), or SetNoExpire.
func setExpireOpt(opt string) SetExpire {
	switch opt {
	case "EX":
		return SetEX
	case "PX":
		return SetPX
	case "EXAT":
		return SetEXAT
	case "PXAT":
		return SetPXAT
	}
	return SetNoExpire
}

// Set is a parsed SET key value [NX|XX] [GET] [EX s|PX ms|EXAT s|PXAT ms|KEEPTTL].
type Set struct {
	Key, Value string
	NX, XX     bool
	Get        bool
	Expire     SetExpire
	// Millis is the expiry in milliseconds: relative for EX and PX,
	// absolute unix ms for EXAT and PXAT; always > 0 when Expire is one
	// of those four.
	Millis int64
}

// ParseSet parses SET with its options in any order, as Redis 7 does: a
// conflicting option is "syntax error", a repeated one is allowed and the
// last one counts (an earlier value is never read), an expiry <= 0 or one
// that overflows in ms is "invalid expire time in 'set' command".
func ParseSet(args [][]byte) (Set, error) {
	r := Set{Key: string(args[1]), Value: string(args[2])}
	var raw []byte
	for i := 3; i < len(args); i++ {
		opt := strings.ToUpper(string(args[i]))
		next := i+1 < len(args)
		switch {
		case opt == "NX" && !r.XX:
			r.NX = true
		case opt == "XX" && !r.NX:
			r.XX = true
		case opt == "GET":
			r.Get = true
		case opt == "KEEPTTL" && (r.Expire == SetNoExpire || r.Expire == SetKeepTTL):
			r.Expire = SetKeepTTL
		case setExpireOpt(opt) != SetNoExpire && next && (r.Expire == SetNoExpire || r.Expire == setExpireOpt(opt)):
			r.Expire = setExpireOpt(opt)
			i++
			raw = args[i]
		default:
			return Set{}, ErrSyntax
		}
	}
	if raw != nil {
		n, err := ParseInt(raw)
		if err != nil {
			return Set{}, err
		}
		if n <= 0 {
			return Set{}, invalidExpire("set")
		}
		if r.Expire == SetEX || r.Expire == SetEXAT {
			var ok bool
			if n, ok = ms.FromSeconds(n); !ok {
				return Set{}, invalidExpire("set")
			}
		}
		r.Millis = n
	}
	return r, nil
}

// Expire is a parsed EXPIRE, PEXPIRE or PEXPIREAT key n [NX|XX|GT|LT].
type Expire struct {
	Key string
	// Millis is the argument in milliseconds (EXPIRE's seconds times 1000);
	// it may be zero or negative, which deletes the key.
	Millis         int64
	NX, XX, GT, LT bool
}

// ParseExpire parses EXPIRE and EXPIREAT (seconds) and PEXPIRE and
// PEXPIREAT (ms), chosen by args[0].
func ParseExpire(args [][]byte) (Expire, error) {
	cmd := strings.ToLower(string(args[0]))
	r := Expire{Key: string(args[1])}
	// Redis checks the options before the number.
	for _, a := range args[3:] {
		switch strings.ToUpper(string(a)) {
		case "NX":
			r.NX = true
		case "XX":
			r.XX = true
		case "GT":
			r.GT = true
		case "LT":
			r.LT = true
		default:
			return Expire{}, fmt.Errorf("%w %s", ErrUnsupportedOption, Clip(a))
		}
	}
	if r.NX && (r.XX || r.GT || r.LT) {
		return Expire{}, ErrExpireNX
	}
	if r.GT && r.LT {
		return Expire{}, ErrExpireGTLT
	}
	n, err := ParseInt(args[2])
	if err != nil {
		return Expire{}, err
	}
	if cmd == "expire" || cmd == "expireat" {
		var ok bool
		if n, ok = ms.FromSeconds(n); !ok {
			return Expire{}, invalidExpire(cmd)
		}
	}
	r.Millis = n
	return r, nil
}

// ParsePairs parses the field-value (or key-value) pairs of HSET and MSET
// from args[from:]: an odd count is the command's arity error.
func ParsePairs(args [][]byte, from int) ([][2]string, error) {
	rest := args[from:]
	if len(rest) == 0 || len(rest)%2 != 0 {
		return nil, arityOf(strings.ToLower(string(args[0])))
	}
	out := make([][2]string, 0, len(rest)/2)
	for i := 0; i < len(rest); i += 2 {
		out = append(out, [2]string{string(rest[i]), string(rest[i+1])})
	}
	return out, nil
}

// GetRange is a parsed GETRANGE key start end.
type GetRange struct {
	Key        string
	Start, End int64
}

// ParseGetRange parses GETRANGE key start end.
func ParseGetRange(args [][]byte) (GetRange, error) {
	r := GetRange{Key: string(args[1])}
	var err error
	if r.Start, err = ParseInt(args[2]); err != nil {
		return GetRange{}, err
	}
	if r.End, err = ParseInt(args[3]); err != nil {
		return GetRange{}, err
	}
	return r, nil
}

// HIncrBy is a parsed HINCRBY key field increment.
type HIncrBy struct {
	Key, Field string
	By         int64
}

// ParseHIncrBy parses HINCRBY key field increment.
func ParseHIncrBy(args [][]byte) (HIncrBy, error) {
	n, err := ParseInt(args[3])
	if err != nil {
		return HIncrBy{}, err
	}
	return HIncrBy{Key: string(args[1]), Field: string(args[2]), By: n}, nil
}

// DelEx is a parsed DELEX key [IFEQ value | IFNE value] (Redis 8.4). With
// no condition it deletes like DEL.
type DelEx struct {
	Key   string
	Cond  string // "", "IFEQ" or "IFNE"
	Value string
}

// ParseDelEx parses DELEX key [IFEQ value | IFNE value].
func ParseDelEx(args [][]byte) (DelEx, error) {
	r := DelEx{Key: string(args[1])}
	switch len(args) {
	case 2:
		return r, nil
	case 4:
		switch c := strings.ToUpper(string(args[2])); c {
		case "IFEQ", "IFNE":
			r.Cond, r.Value = c, string(args[3])
			return r, nil
		}
	}
	return DelEx{}, ErrSyntax
}

// ParsePush parses LPUSH and RPUSH key element [element ...] into the key
// and elements.
func ParsePush(args [][]byte) (string, []string) {
	els := make([]string, len(args)-2)
	for i, a := range args[2:] {
		els[i] = string(a)
	}
	return string(args[1]), els
}

// ParseCount parses the optional count of LPOP key [count]: -1 when not
// given, otherwise >= 0 ("value is out of range, must be positive").
func ParseCount(args [][]byte) (int64, error) {
	if len(args) < 3 {
		return -1, nil
	}
	if len(args) > 3 {
		return 0, ErrSyntax
	}
	n, err := ParseInt(args[2])
	if err != nil || n < 0 {
		return 0, ErrOutOfRange
	}
	return n, nil
}

// ErrOutOfRange is LPOP's error for a negative or non-integer count.
var ErrOutOfRange = reply.NewErr("ERR", "value is out of range, must be positive")
