package textrow

import (
	"encoding/json"
	"errors"
	"strings"
)

// Kind says what a raw value was in its input: untyped text (a CSV
// field) or one of the JSON value types.
type Kind uint8

const (
	Text   Kind = iota // untyped text, such as a CSV field: "" is NULL
	String             // JSON string (unescaped)
	Number             // JSON number (its literal text)
	Bool               // JSON true or false ("true" or "false")
	Null               // JSON null, or a missing key
	Nested             // JSON object or array (its raw text)
)

// ErrInvalidJSON is the reason given for input that is not valid JSON.
// ScanObject does not check validity itself: callers check it first with
// json.Valid, usually once per row, and report this error.
var ErrInvalidJSON = errors.New("invalid JSON")

// ErrNotObject is returned by ScanObject when the value is valid JSON but
// not an object.
var ErrNotObject = errors.New("not a JSON object")

// ScanObject calls fn for each member of the JSON object s, in document
// order, and stops at the first error fn returns. s must be valid JSON
// (see ErrInvalidJSON); a value that is not an object gives ErrNotObject.
//
// Values are passed as substrings of s, which is what makes scanning
// cheap: a string's contents without the quotes (decoded only when it has
// escapes, so other bytes, invalid UTF-8 included, pass through as they
// are), a number's literal, "true" or "false", "" for null, and the raw
// text of a nested object or array. Keys follow the rule of strings.
func ScanObject(s string, fn func(key string, k Kind, v string) error) error {
	i := skipSpace(s, 0)
	if i >= len(s) || s[i] != '{' {
		return ErrNotObject
	}
	i = skipSpace(s, i+1)
	if i < len(s) && s[i] == '}' {
		return nil
	}
	for i < len(s) {
		key, next, err := scanString(s, i)
		if err != nil {
			return err
		}
		i = skipSpace(s, next)
		i = skipSpace(s, i+1) // ':'
		var (
			k   Kind
			val string
		)
		switch c := s[i]; {
		case c == '"':
			val, next, err = scanString(s, i)
			if err != nil {
				return err
			}
			k = String
		case c == 't':
			k, val, next = Bool, "true", i+4
		case c == 'f':
			k, val, next = Bool, "false", i+5
		case c == 'n':
			k, val, next = Null, "", i+4
		case c == '{' || c == '[':
			next = skipNested(s, i)
			k, val = Nested, s[i:next]
		default:
			next = i
			for next < len(s) && strings.IndexByte("+-0123456789.eE", s[next]) >= 0 {
				next++
			}
			k, val = Number, s[i:next]
		}
		if err := fn(key, k, val); err != nil {
			return err
		}
		i = skipSpace(s, next)
		if i >= len(s) || s[i] == '}' {
			return nil
		}
		i = skipSpace(s, i+1) // ','
	}
	return nil
}

func skipSpace(s string, i int) int {
	for i < len(s) && (s[i] == ' ' || s[i] == '\t' || s[i] == '\n' || s[i] == '\r') {
		i++
	}
	return i
}

// scanString reads the string literal starting at s[i] == '"' and returns
// its value and the index after the closing quote.
func scanString(s string, i int) (string, int, error) {
	escaped := false
	for j := i + 1; j < len(s); j++ {
		switch s[j] {
		case '\\':
			escaped = true
			j++
		case '"':
			if !escaped {
				return s[i+1 : j], j + 1, nil
			}
			var v string
			if err := json.Unmarshal([]byte(s[i:j+1]), &v); err != nil {
				return "", 0, err
			}
			return v, j + 1, nil
		}
	}
	return "", 0, errors.New("unterminated string")
}

// skipNested returns the index after the object or array starting at i.
func skipNested(s string, i int) int {
	depth := 0
	for ; i < len(s); i++ {
		switch s[i] {
		case '{', '[':
			depth++
		case '}', ']':
			depth--
			if depth == 0 {
				return i + 1
			}
		case '"':
			_, next, err := scanString(s, i)
			if err != nil {
				return len(s)
			}
			i = next - 1
		}
	}
	return len(s)
}
