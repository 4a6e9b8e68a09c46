// Package jsonvalue holds the rules by which the engine writes values as
// JSON, shared by the JSON sinks (Arrow values) and request-time lookups
// (Go values), so that a feature reads the same in a sink's output and in
// a lookup response:
//
//   - strings are always valid JSON: control characters are escaped and
//     invalid UTF-8 becomes U+FFFD ([AppendString]);
//   - floats take the fewest digits that read back to the same value, and
//     NaN and ±Inf, which JSON cannot hold, become null ([AppendFloat]);
//   - times are RFC 3339 in UTC with only the fractional digits needed
//     ([AppendTime]).
package jsonvalue

import (
	"math"
	"strconv"
	"time"
	"unicode/utf8"
)

// AppendString appends s as a JSON string literal to dst and returns the
// extended buffer. Quotes, backslashes and control characters are
// escaped; invalid UTF-8 is replaced by U+FFFD, so the output is always
// valid JSON. Other characters, U+2028 and U+2029 included, are written
// as they are. It allocates nothing when dst has room.
func AppendString[S ~string | ~[]byte](dst []byte, s S) []byte {
	const hex = "0123456789abcdef"
	dst = append(dst, '"')
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			switch {
			case c == '"' || c == '\\':
				dst = append(dst, '\\', c)
			case c == '\n':
				dst = append(dst, '\\', 'n')
			case c == '\r':
				dst = append(dst, '\\', 'r')
			case c == '\t':
				dst = append(dst, '\\', 't')
			case c < 0x20:
				dst = append(dst, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
			default:
				dst = append(dst, c)
			}
			i++
			continue
		}
		// At most utf8.UTFMax bytes: the conversion stays on the stack.
		r, size := utf8.DecodeRuneInString(string(s[i:min(i+utf8.UTFMax, len(s))]))
		if r == utf8.RuneError && size == 1 {
			dst = append(dst, "\ufffd"...)
		} else {
			dst = append(dst, s[i:i+size]...)
		}
		i += size
	}
	return append(dst, '"')
}

// AppendFloat appends f as a JSON number, formatted for a float of the
// given bit size (32 or 64) with the fewest digits that parse back to f;
// NaN and ±Inf are written as null.
func AppendFloat(dst []byte, f float64, bits int) []byte {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return append(dst, "null"...)
	}
	return strconv.AppendFloat(dst, f, 'g', -1, bits)
}

// AppendTime appends t in UTC as RFC 3339 text, without quotes, with only
// the fractional-second digits needed: 2024-01-03T10:00:00Z,
// 2024-01-03T10:00:00.5Z.
func AppendTime(dst []byte, t time.Time) []byte {
	return t.UTC().AppendFormat(dst, time.RFC3339Nano)
}
