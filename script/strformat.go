package script

import (
	"fmt"
	"strconv"
	"strings"

	lua "github.com/yuin/gopher-lua"
)

// string.format, as Lua 5.1 does it with C's sprintf.

func (r *runner) strFormat(L *lua.LState) int {
	fs := checkString(L, 1, "format")
	top := L.GetTop()
	arg := 1
	at := func(i int) byte {
		if i < len(fs) {
			return fs[i]
		}
		return 0
	}
	var parts []string
	raw := func(s string) {
		r.chargeBytes(L, len(s))
		parts = append(parts, s)
	}
	add := func(s string) {
		if i := strings.IndexByte(s, 0); i >= 0 {
			s = s[:i] // sprintf's result is read as a C string
		}
		raw(s)
	}
	for i := 0; i < len(fs); {
		if fs[i] != '%' {
			j := strings.IndexByte(fs[i:], '%')
			if j < 0 {
				j = len(fs) - i
			}
			raw(fs[i : i+j])
			i += j
			continue
		}
		i++
		if at(i) == '%' {
			raw("%")
			i++
			continue
		}
		arg++
		if arg > top {
			argError(L, arg, "format", "no value")
		}
		start := i
		for at(i) != 0 && strings.IndexByte("-+ #0", at(i)) >= 0 {
			i++
		}
		if i-start >= 6 {
			L.RaiseError("invalid format (repeated flags)")
		}
		flags := fs[start:i]
		width, prec := -1, -1
		ws := i
		for k := 0; k < 2 && isDigit(int(at(i))); k++ {
			i++
		}
		if i > ws {
			width, _ = strconv.Atoi(fs[ws:i])
		}
		if at(i) == '.' {
			i++
			ps := i
			for k := 0; k < 2 && isDigit(int(at(i))); k++ {
				i++
			}
			prec, _ = strconv.Atoi(fs[ps:i])
		}
		if isDigit(int(at(i))) {
			L.RaiseError("invalid format (width or precision too long)")
		}
		spec := fs[start:i]
		conv := at(i)
		i++
		switch conv {
		case 'c':
			c := byte(checkNumberToInt(L, arg))
			add(pad(string([]byte{c}), width, strings.Contains(flags, "-")))
		case 'd', 'i':
			n := toInt64(checkNumber(L, arg, "format"))
			add(fmt.Sprintf("%"+spec+"d", n))
		case 'o', 'u', 'x', 'X':
			f := checkNumber(L, arg, "format")
			u := uint64(toInt64(f))
			if f >= 1<<63 && f < 1<<64 {
				u = uint64(f)
			}
			verb := string(conv)
			if conv == 'u' {
				verb = "d"
			}
			add(fmt.Sprintf("%"+spec+verb, u))
		case 'e', 'E', 'f', 'g', 'G':
			f := checkNumber(L, arg, "format")
			add(formatFloat(f, flags, width, prec, conv))
		case 'q':
			s := checkString(L, arg, "format")
			r.chargeBytes(L, len(s)+2)
			var b strings.Builder
			b.Grow(len(s) + 2)
			b.WriteByte('"')
			for k := 0; k < len(s); k++ {
				switch c := s[k]; c {
				case '"', '\\', '\n':
					b.WriteByte('\\')
					b.WriteByte(c)
				case '\r':
					b.WriteString("\\r")
				case 0:
					b.WriteString("\\000")
				default:
					b.WriteByte(c)
				}
			}
			b.WriteByte('"')
			parts = append(parts, b.String())
		case 's':
			s := checkString(L, arg, "format")
			if prec < 0 && len(s) >= 100 {
				// too long for sprintf's buffer: Lua keeps it whole
				raw(s)
				continue
			}
			if k := strings.IndexByte(s, 0); k >= 0 {
				s = s[:k]
			}
			if prec >= 0 && len(s) > prec {
				s = s[:prec]
			}
			add(pad(s, width, strings.Contains(flags, "-")))
		default:
			L.RaiseError("invalid option '%%%s' to 'format'", strings.TrimRight(string([]byte{conv}), "\x00"))
		}
	}
	L.Push(lua.LString(strings.Join(parts, "")))
	return 1
}

func checkNumberToInt(L *lua.LState, arg int) int {
	return toInt(checkNumber(L, arg, "format"))
}

// pad pads s with spaces to width bytes (C's %Ns / %-Ns).
func pad(s string, width int, left bool) string {
	if len(s) >= width {
		return s
	}
	sp := strings.Repeat(" ", width-len(s))
	if left {
		return s + sp
	}
	return sp + s
}

// formatFloat is C's %e/%E/%f/%g/%G. Go's verbs agree with C's for finite
// numbers once the default precision (6) is explicit; infinities and NaN
// are written as glibc does.
func formatFloat(f float64, flags string, width, prec int, conv byte) string {
	if s, ok := fmtSpecial(f); ok {
		if s[0] != '-' {
			if strings.Contains(flags, "+") {
				s = "+" + s
			} else if strings.Contains(flags, " ") {
				s = " " + s
			}
		}
		if conv == 'E' || conv == 'G' {
			s = strings.ToUpper(s)
		}
		return pad(s, width, strings.Contains(flags, "-"))
	}
	if prec < 0 {
		prec = 6
	}
	spec := "%" + flags
	if width >= 0 {
		spec += strconv.Itoa(width)
	}
	spec += "." + strconv.Itoa(prec) + string(conv)
	if conv == 'g' || conv == 'G' {
		if prec == 0 {
			// C treats a %g precision of 0 as 1.
			spec = strings.Replace(spec, ".0"+string(conv), ".1"+string(conv), 1)
		}
	}
	return fmt.Sprintf(spec, f)
}
