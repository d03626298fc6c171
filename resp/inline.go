package resp

import "bytes"

// readInline reads a command sent as one line of text (telnet style), as
// Redis's processInlineBuffer does: the line ends at '\n', an optional '\r'
// before it is dropped, and the words are split by splitInline.
func (r *Reader) readInline() ([][]byte, error) {
	line, n, err := r.peekLine(r.lim.MaxInline + 1) // +1: room for a '\r'
	if err == errLineTooLong {
		return nil, limitErr("too big inline request")
	}
	if err != nil {
		return nil, err
	}
	if len(line) > 0 && line[len(line)-1] == '\r' {
		line = line[:len(line)-1]
	}
	if len(line) > r.lim.MaxInline {
		return nil, limitErr("too big inline request")
	}
	args, err := splitInline(line, r.lim)
	if err != nil {
		return nil, err // a limit error leaves the line unconsumed
	}
	r.r += n
	return args, nil
}

// splitInline splits an inline line into arguments with the rules of Redis's
// sdssplitargs, byte for byte:
//   - words are separated by spaces, tabs, '\r', '\n' (and '\v', '\f' before
//     a word);
//   - "double quotes" understand \n \r \t \b \a \xHH and backslash before any
//     other byte (that byte, e.g. \\ and \");
//   - 'single quotes' understand only \';
//   - a closing quote must be followed by a space or the end of the line;
//   - the line ends at a NUL byte, since Redis parses it as a C string.
//
// It returns no arguments for a blank line. The arguments share one
// allocation, no larger than the line.
func splitInline(line []byte, lim Limits) ([][]byte, error) {
	if i := bytes.IndexByte(line, 0); i >= 0 {
		line = line[:i]
	}
	// at mimics reading a NUL-terminated string: 0 past the end.
	at := func(i int) byte {
		if i < len(line) {
			return line[i]
		}
		return 0
	}
	var args [][]byte
	var data []byte
	p := 0
	for {
		for p < len(line) && isSpace(line[p]) {
			p++
		}
		if p == len(line) {
			return args, nil
		}
		if data == nil {
			data = make([]byte, 0, len(line)) // unescaping only shrinks
		}
		start := len(data)
		inq, insq := false, false
		for done := false; !done; {
			c := at(p)
			switch {
			case inq:
				switch {
				case c == '\\' && at(p+1) == 'x' && isHex(at(p+2)) && isHex(at(p+3)):
					data = append(data, unhex(at(p+2))<<4|unhex(at(p+3)))
					p += 3
				case c == '\\' && at(p+1) != 0:
					p++
					data = append(data, unescape(line[p]))
				case c == '"':
					if n := at(p + 1); n != 0 && !isSpace(n) {
						return nil, protoErr("unbalanced quotes in request")
					}
					done = true
				case c == 0:
					return nil, protoErr("unbalanced quotes in request")
				default:
					data = append(data, c)
				}
			case insq:
				switch {
				case c == '\\' && at(p+1) == '\'':
					p++
					data = append(data, '\'')
				case c == '\'':
					if n := at(p + 1); n != 0 && !isSpace(n) {
						return nil, protoErr("unbalanced quotes in request")
					}
					done = true
				case c == 0:
					return nil, protoErr("unbalanced quotes in request")
				default:
					data = append(data, c)
				}
			default:
				switch c {
				case ' ', '\n', '\r', '\t', 0:
					done = true
				case '"':
					inq = true
				case '\'':
					insq = true
				default:
					data = append(data, c)
				}
			}
			if p < len(line) {
				p++
			}
		}
		if len(args) == lim.MaxArgs {
			return nil, limitErr("too many arguments")
		}
		if len(data)-start > lim.MaxBulk {
			return nil, limitErr("too big inline argument")
		}
		if len(data) > lim.MaxCommand {
			return nil, limitErr("too big command")
		}
		args = append(args, data[start:len(data):len(data)])
	}
}

// isSpace is C's isspace in the "C" locale.
func isSpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' || c == '\r'
}

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

func unhex(c byte) byte {
	switch {
	case c <= '9':
		return c - '0'
	case c <= 'F':
		return c - 'A' + 10
	default:
		return c - 'a' + 10
	}
}

// unescape maps the byte after a backslash inside double quotes.
func unescape(c byte) byte {
	switch c {
	case 'n':
		return '\n'
	case 'r':
		return '\r'
	case 't':
		return '\t'
	case 'b':
		return '\b'
	case 'a':
		return '\a'
	}
	return c
}
