package request

import (
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// parseFast decodes the common shape of a lookup request without
// encoding/json: one object with the members "key" (an object of
// scalars), "at" (epoch milliseconds or an RFC 3339 string) and optionally
// "row" (an object of scalars), member names spelled exactly so, strings
// without escapes. It is a shortcut, not a second definition of the
// format: ok is true only when parseLookup would return the same lookup
// without an error, and anything else (a duplicate or differently cased
// member, an escape, a nested value, null, an unknown or missing column,
// malformed JSON, trailing data) returns ok false, and the caller decodes
// raw with parseLookup, which also words the errors.
func parseFast(raw []byte, keyCols []string) (l lookup, ok bool) {
	p := fastParser{b: raw}
	p.ws()
	if !p.byte('{') {
		return lookup{}, false
	}
	var haveKey, haveAt, haveRow bool
	p.ws()
	if p.peek() == '}' {
		return lookup{}, false // no "key": parseLookup words the error
	}
	for {
		p.ws()
		name, ok := p.str()
		if !ok {
			return lookup{}, false
		}
		p.ws()
		if !p.byte(':') {
			return lookup{}, false
		}
		p.ws()
		switch string(name) {
		case "key":
			if haveKey {
				return lookup{}, false
			}
			haveKey = true
			if l.key, ok = p.keyObject(keyCols); !ok {
				return lookup{}, false
			}
		case "at":
			if haveAt {
				return lookup{}, false
			}
			haveAt = true
			if l.at, ok = p.at(); !ok {
				return lookup{}, false
			}
		case "row":
			if haveRow {
				return lookup{}, false
			}
			haveRow = true
			if l.row, ok = p.rowObject(); !ok {
				return lookup{}, false
			}
		default:
			return lookup{}, false
		}
		p.ws()
		if p.byte(',') {
			continue
		}
		if !p.byte('}') {
			return lookup{}, false
		}
		break
	}
	p.ws()
	if p.i != len(p.b) || !haveKey || !haveAt {
		return lookup{}, false
	}
	return l, true
}

// fastParser reads JSON from b at i.
type fastParser struct {
	b []byte
	i int
}

// ws skips JSON whitespace.
func (p *fastParser) ws() {
	for p.i < len(p.b) {
		switch p.b[p.i] {
		case ' ', '\t', '\n', '\r':
			p.i++
		default:
			return
		}
	}
}

func (p *fastParser) peek() byte {
	if p.i < len(p.b) {
		return p.b[p.i]
	}
	return 0
}

// byte consumes c if it is next.
func (p *fastParser) byte(c byte) bool {
	if p.peek() == c {
		p.i++
		return true
	}
	return false
}

// str reads a string without escapes or control characters, in valid
// UTF-8, and returns its contents (a subslice of b).
func (p *fastParser) str() ([]byte, bool) {
	if !p.byte('"') {
		return nil, false
	}
	start := p.i
	ascii := true
	for p.i < len(p.b) {
		c := p.b[p.i]
		switch {
		case c == '"':
			s := p.b[start:p.i]
			p.i++
			if !ascii && !utf8.Valid(s) {
				return nil, false
			}
			return s, true
		case c == '\\' || c < 0x20:
			return nil, false
		case c >= utf8.RuneSelf:
			ascii = false
		}
		p.i++
	}
	return nil, false
}

// number reads a JSON number and returns its text.
func (p *fastParser) number() ([]byte, bool) {
	start := p.i
	p.byte('-')
	switch c := p.peek(); {
	case c == '0':
		p.i++
	case c >= '1' && c <= '9':
		p.digits()
	default:
		return nil, false
	}
	if p.byte('.') {
		if !p.digits() {
			return nil, false
		}
	}
	if c := p.peek(); c == 'e' || c == 'E' {
		p.i++
		if c := p.peek(); c == '+' || c == '-' {
			p.i++
		}
		if !p.digits() {
			return nil, false
		}
	}
	return p.b[start:p.i], true
}

// digits consumes one or more decimal digits.
func (p *fastParser) digits() bool {
	start := p.i
	for p.i < len(p.b) && p.b[p.i] >= '0' && p.b[p.i] <= '9' {
		p.i++
	}
	return p.i > start
}

// literal consumes word (true, false, null) if it is next.
func (p *fastParser) literal(word string) bool {
	if len(p.b)-p.i >= len(word) && string(p.b[p.i:p.i+len(word)]) == word {
		p.i += len(word)
		return true
	}
	return false
}

// scalar reads a value as scalar (below) turns it into a lookup value:
// an integer that fits int64 is an int64, another number a float64;
// strings, booleans and null stay. Objects, arrays and numbers out of
// float64's range are not read (scalar refuses the latter two).
func (p *fastParser) scalar() (any, bool) {
	switch c := p.peek(); {
	case c == '"':
		s, ok := p.str()
		if !ok {
			return nil, false
		}
		return string(s), true
	case c == 't':
		return true, p.literal("true")
	case c == 'f':
		return false, p.literal("false")
	case c == 'n':
		return nil, p.literal("null")
	case c == '-' || (c >= '0' && c <= '9'):
		num, ok := p.number()
		if !ok {
			return nil, false
		}
		// As scalar: an integer is an int64, or a uint64 beyond int64's
		// range; any other number a float64.
		if n, err := strconv.ParseInt(string(num), 10, 64); err == nil {
			return n, true
		}
		if n, err := strconv.ParseUint(string(num), 10, 64); err == nil {
			return n, true
		}
		f, err := strconv.ParseFloat(string(num), 64)
		if err != nil {
			return nil, false
		}
		return f, true
	}
	return nil, false
}

// keyObject reads the "key" object: a value for every key column, each
// named once, exactly or in another case (matchKey's rules).
func (p *fastParser) keyObject(keyCols []string) (map[string]any, bool) {
	if !p.byte('{') {
		return nil, false
	}
	key := make(map[string]any, len(keyCols))
	p.ws()
	if !p.byte('}') {
		for {
			p.ws()
			name, ok := p.str()
			if !ok {
				return nil, false
			}
			col := ""
			for _, c := range keyCols {
				if c == string(name) || strings.EqualFold(c, string(name)) {
					col = c
					break
				}
			}
			if col == "" {
				return nil, false
			}
			if _, dup := key[col]; dup {
				return nil, false
			}
			v, ok := p.memberValue()
			if !ok {
				return nil, false
			}
			key[col] = v
			more, ok := p.afterMember()
			if !ok {
				return nil, false
			}
			if more {
				continue
			}
			break
		}
	}
	if len(key) != len(keyCols) {
		return nil, false
	}
	return key, true
}

// rowObject reads the "row" object: column names, each once, and scalars.
func (p *fastParser) rowObject() (map[string]any, bool) {
	if !p.byte('{') {
		return nil, false
	}
	row := map[string]any{}
	p.ws()
	if p.byte('}') {
		return row, true
	}
	for {
		p.ws()
		name, ok := p.str()
		if !ok {
			return nil, false
		}
		if _, dup := row[string(name)]; dup {
			return nil, false
		}
		v, ok := p.memberValue()
		if !ok {
			return nil, false
		}
		row[string(name)] = v
		more, ok := p.afterMember()
		if !ok {
			return nil, false
		}
		if !more {
			return row, true
		}
	}
}

// memberValue reads the rest of an object member after its name: the
// colon and a scalar value.
func (p *fastParser) memberValue() (any, bool) {
	p.ws()
	if !p.byte(':') {
		return nil, false
	}
	p.ws()
	return p.scalar()
}

// afterMember reads what follows an object member: a comma (more members
// follow) or the closing brace.
func (p *fastParser) afterMember() (more, ok bool) {
	p.ws()
	if p.byte(',') {
		return true, true
	}
	return false, p.byte('}')
}

// at reads "at" as parseAt does: an integral number of epoch milliseconds
// or an RFC 3339 string.
func (p *fastParser) at() (time.Time, bool) {
	if p.peek() == '"' {
		s, ok := p.str()
		if !ok {
			return time.Time{}, false
		}
		t, err := time.Parse(time.RFC3339Nano, string(s))
		return t, err == nil
	}
	num, ok := p.number()
	if !ok {
		return time.Time{}, false
	}
	ms, err := strconv.ParseInt(string(num), 10, 64)
	if err != nil || !atInRange(ms) {
		return time.Time{}, false
	}
	return time.UnixMilli(ms), true
}
