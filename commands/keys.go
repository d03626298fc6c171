package commands

import (
	"fmt"
	"math"
	"strings"

	"github.com/fenced/fenced/internal/ms"
	"github.com/fenced/fenced/reply"
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
		n, err := expireMillis(raw, r.Expire, "set")
		if err != nil {
			return Set{}, err
		}
		r.Millis = n
	}
	return r, nil
}

// expireMillis is Redis's getExpireMillisecondsOrReply without the clock:
// the expiry raw of option opt, in ms, > 0 and not overflowing; what is
// left (a relative time that overflows once added to the Unix time) the
// state machine checks.
func expireMillis(raw []byte, opt SetExpire, cmd string) (int64, error) {
	n, err := ParseInt(raw)
	if err != nil {
		return 0, err
	}
	if n <= 0 {
		return 0, invalidExpire(cmd)
	}
	if opt == SetEX || opt == SetEXAT {
		var ok bool
		if n, ok = ms.FromSeconds(n); !ok {
			return 0, invalidExpire(cmd)
		}
	}
	return n, nil
}

// ParseSetEx parses SETEX key seconds value and PSETEX key milliseconds
// value, chosen by args[0], into the SET they are.
func ParseSetEx(args [][]byte) (Set, error) {
	// The name in an error is the table's, never the bytes as sent.
	cmd := "psetex"
	r := Set{Key: string(args[1]), Value: string(args[3]), Expire: SetPX}
	if strings.EqualFold(string(args[0]), "setex") {
		cmd, r.Expire = "setex", SetEX
	}
	n, err := expireMillis(args[2], r.Expire, cmd)
	if err != nil {
		return Set{}, err
	}
	r.Millis = n
	return r, nil
}

// GetEx is a parsed GETEX key [EX s|PX ms|EXAT s|PXAT ms|PERSIST].
type GetEx struct {
	Key     string
	Expire  SetExpire // SetNoExpire when none is given
	Persist bool
	Millis  int64 // as Set.Millis, when Invalid is nil
	// Invalid is the expiry's own error ("not an integer", "invalid
	// expire time"), which Redis 7.0 answers only once it has found the
	// key a string: a missing key answers nil whatever the number.
	Invalid error
}

// ParseGetEx parses GETEX with Redis 7.0's option rules (SET's: the same
// option again is allowed and the last counts, another one is a syntax
// error); the syntax is checked before the key, the number after.
func ParseGetEx(args [][]byte) (GetEx, error) {
	r := GetEx{Key: string(args[1])}
	var raw []byte
	for i := 2; i < len(args); i++ {
		opt := strings.ToUpper(string(args[i]))
		switch {
		case opt == "PERSIST" && r.Expire == SetNoExpire:
			r.Persist = true
		case setExpireOpt(opt) != SetNoExpire && i+1 < len(args) && !r.Persist &&
			(r.Expire == SetNoExpire || r.Expire == setExpireOpt(opt)):
			r.Expire = setExpireOpt(opt)
			i++
			raw = args[i]
		default:
			return GetEx{}, ErrSyntax
		}
	}
	if raw != nil {
		r.Millis, r.Invalid = expireMillis(raw, r.Expire, "getex")
	}
	return r, nil
}

// IncrBy is a parsed INCRBY key increment or DECRBY key decrement, as the
// amount to add.
type IncrBy struct {
	Key string
	By  int64
}

// ErrDecrOverflow is DECRBY's of -2^63, whose negation does not fit.
var ErrDecrOverflow = reply.NewErr("ERR", "decrement would overflow")

// ParseIncrBy parses INCRBY and DECRBY, chosen by args[0].
func ParseIncrBy(args [][]byte) (IncrBy, error) {
	n, err := ParseInt(args[2])
	if err != nil {
		return IncrBy{}, err
	}
	if strings.EqualFold(string(args[0]), "decrby") {
		if n == math.MinInt64 {
			return IncrBy{}, ErrDecrOverflow
		}
		n = -n
	}
	return IncrBy{Key: string(args[1]), By: n}, nil
}

// SetRange is a parsed SETRANGE key offset value.
type SetRange struct {
	Key    string
	Offset int64 // >= 0
	Value  string
}

// ErrOffsetRange is SETRANGE's negative offset.
var ErrOffsetRange = reply.NewErr("ERR", "offset is out of range")

// ParseSetRange parses SETRANGE key offset value.
func ParseSetRange(args [][]byte) (SetRange, error) {
	n, err := ParseInt(args[2])
	if err != nil {
		return SetRange{}, err
	}
	if n < 0 {
		return SetRange{}, ErrOffsetRange
	}
	return SetRange{Key: string(args[1]), Offset: n, Value: string(args[3])}, nil
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

// ParseCount parses the optional count of LPOP or RPOP key [count]: -1
// when not given, otherwise >= 0 ("value is out of range, must be
// positive").
func ParseCount(args [][]byte) (int64, error) {
	if len(args) < 3 {
		return -1, nil
	}
	if len(args) > 3 {
		// Redis's popGenericCommand answers the arity error, not a syntax
		// error, though the table's arity (-2) let the command through.
		name := "lpop"
		if strings.EqualFold(string(args[0]), "rpop") {
			name = "rpop"
		}
		return 0, ArityError(name)
	}
	n, err := ParseInt(args[2])
	if err != nil || n < 0 {
		return 0, ErrOutOfRange
	}
	return n, nil
}

// ErrOutOfRange is LPOP's error for a negative or non-integer count.
var ErrOutOfRange = reply.NewErr("ERR", "value is out of range, must be positive")
