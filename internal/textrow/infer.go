package textrow

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
)

// Inferred is the type that the values sampled for a column suggest so
// far. The zero value, InferUnknown, is the type of a column seen only as
// NULL.
type Inferred uint8

const (
	InferUnknown   Inferred = iota // only NULLs seen
	InferInt                       // int64
	InferFloat                     // float64
	InferBool                      // bool
	InferTimestamp                 // timestamp[ms, UTC]
	InferNonFinite                 // NaN or Inf: float64 among numbers, else string
	InferString                    // string
)

// Merge widens a by b: int and float make float, and so do NaN or Inf
// with either; any other mix of known types makes string.
func (a Inferred) Merge(b Inferred) Inferred {
	switch {
	case a == InferUnknown:
		return b
	case b == InferUnknown || a == b:
		return a
	case a.numeric() && b.numeric():
		return InferFloat
	}
	return InferString
}

func (a Inferred) numeric() bool {
	return a == InferInt || a == InferFloat || a == InferNonFinite
}

// DataType is the Arrow type of a column inferred as a. A column seen only
// as NULL, or only as NaN and Inf (words such as a name could be), is
// string.
func (a Inferred) DataType() arrow.DataType {
	switch a {
	case InferInt:
		return arrow.PrimitiveTypes.Int64
	case InferFloat:
		return arrow.PrimitiveTypes.Float64
	case InferBool:
		return arrow.FixedWidthTypes.Boolean
	case InferTimestamp:
		return arrow.FixedWidthTypes.Timestamp_ms
	}
	return arrow.BinaryTypes.String
}

// Classify infers the type of one raw value s of kind k.
//
// JSON values are typed by their JSON type: a number is int when it is an
// integer that fits int64 and float otherwise; a string is a timestamp
// when it holds an RFC 3339 date-time, unknown when empty, and string
// otherwise; objects and arrays are strings. Untyped text is an int, a
// float (decimal notation), NaN or Inf (any case, Inf and Infinity with a
// sign: what strconv.ParseFloat and the CSV sink's floats spell),
// true/false (any case), an RFC 3339 date-time or a string, in that
// order; empty text is unknown.
func Classify(k Kind, s string) Inferred {
	switch k {
	case Null:
		return InferUnknown
	case Bool:
		return InferBool
	case Nested:
		return InferString
	case Number:
		if isInteger(s) {
			if _, err := strconv.ParseInt(s, 10, 64); err == nil {
				return InferInt
			}
		}
		return InferFloat
	case String:
		if s == "" {
			return InferUnknown
		}
		if looksTimestamp(s) {
			return InferTimestamp
		}
		return InferString
	}
	// Untyped text.
	switch {
	case s == "":
		return InferUnknown
	case isInteger(s):
		if _, err := strconv.ParseInt(s, 10, 64); err == nil {
			return InferInt
		}
		return InferFloat // too large for int64
	case isDecimal(s):
		return InferFloat
	case isNonFinite(s):
		return InferNonFinite
	case strings.EqualFold(s, "true") || strings.EqualFold(s, "false"):
		return InferBool
	case looksTimestamp(s):
		return InferTimestamp
	}
	return InferString
}

// Mix counts the kinds of the values sampled for one column and keeps the
// first of each, so that a column inferred as string because of a few
// values (a typo among numbers) can say which. The zero value is ready.
type Mix struct {
	n     [InferString + 1]int
	first [InferString + 1]string
	line  [InferString + 1]int64
}

// Add records value s, classified t, seen at line. NULLs (InferUnknown)
// are not counted.
func (m *Mix) Add(t Inferred, s string, line int64) {
	if t == InferUnknown {
		return
	}
	if m.n[t] == 0 {
		m.first[t], m.line[t] = cut(s, 32), line
	}
	m.n[t]++
}

// Note explains a column that the values sampled make a string although
// most of them are of one other type (numbers, booleans or times): the
// first value that is not, its line, and how many are; "" when there is
// nothing to explain (a column of one type, or mostly strings).
func (m *Mix) Note() string {
	// Integers, decimals, NaN and Inf make one group, the numbers.
	group := func(t Inferred) Inferred {
		if t.numeric() {
			return InferFloat
		}
		return t
	}
	var n [InferString + 1]int
	total, groups := 0, 0
	for t := InferInt; t <= InferString; t++ {
		if m.n[t] > 0 && n[group(t)] == 0 {
			groups++
		}
		n[group(t)] += m.n[t]
		total += m.n[t]
	}
	best := InferUnknown
	for t := InferFloat; t < InferString; t++ {
		if n[t] > 0 && (best == InferUnknown || n[t] > n[best]) {
			best = t
		}
	}
	if groups < 2 || best == InferUnknown || 2*n[best] <= total {
		return ""
	}
	odd := InferUnknown // the first value outside best's group
	for t := InferInt; t <= InferString; t++ {
		if m.n[t] > 0 && group(t) != best && (odd == InferUnknown || m.line[t] < m.line[odd]) {
			odd = t
		}
	}
	typ := best.DataType()
	if best == InferFloat && m.n[InferFloat] == 0 && m.n[InferNonFinite] == 0 {
		typ = InferInt.DataType()
	}
	return fmt.Sprintf("line %d holds %q, where %d of the %d values sampled are %s", m.line[odd], m.first[odd], n[best], total, typ)
}

// Inference derives a schema from sampled rows, for every text source
// alike: the columns are those declared (a CSV header) and then the keys
// in the order first seen (JSON objects), each typed by merging the
// Classify of its values, and Notes explains a column made a string by a
// few odd values. The zero value is ready to use.
type Inference struct {
	names []string
	types []Inferred
	mixes []Mix
	slot  map[string]int
}

// Columns declares columns, in order, before any value is added: the
// header of a CSV file. A column without values is string.
func (in *Inference) Columns(names ...string) {
	for _, n := range names {
		in.column(n)
	}
}

// Value adds the raw value v of kind k, seen at line, to the column
// named key, which is added after the others if new.
func (in *Inference) Value(key string, k Kind, v string, line int64) {
	in.add(key, Classify(k, v), v, line)
}

// Object adds the members of the JSON object s, which must be valid JSON.
// A value that is not an object adds nothing.
func (in *Inference) Object(s string) { in.ObjectAt(s, 0) }

// ObjectAt is Object for the object at line, which Notes quote.
func (in *Inference) ObjectAt(s string, line int64) {
	_ = ScanObject(s, func(key string, k Kind, v string) error {
		in.add(key, Classify(k, v), v, line)
		return nil
	})
}

// column returns the slot of column key, adding it if new.
func (in *Inference) column(key string) int {
	i, ok := in.slot[key]
	if !ok {
		if in.slot == nil {
			in.slot = map[string]int{}
		}
		i = len(in.names)
		in.slot[key] = i
		in.names = append(in.names, key)
		in.types = append(in.types, InferUnknown)
		in.mixes = append(in.mixes, Mix{})
	}
	return i
}

func (in *Inference) add(key string, t Inferred, v string, line int64) {
	i := in.column(key)
	in.types[i] = in.types[i].Merge(t)
	in.mixes[i].Add(t, v, line)
}

// Notes returns Mix.Note of every column that has one, by name.
func (in *Inference) Notes() map[string]string {
	var notes map[string]string
	for i, n := range in.names {
		if note := in.mixes[i].Note(); note != "" {
			if notes == nil {
				notes = map[string]string{}
			}
			notes[n] = note
		}
	}
	return notes
}

// Schema returns the schema inferred so far; every field is nullable.
func (in *Inference) Schema() *arrow.Schema {
	fields := make([]arrow.Field, len(in.names))
	for i, n := range in.names {
		fields[i] = arrow.Field{Name: n, Type: in.types[i].DataType(), Nullable: true}
	}
	return arrow.NewSchema(fields, nil)
}

// isInteger reports whether s is an optional sign followed by digits.
func isInteger(s string) bool {
	if s != "" && (s[0] == '-' || s[0] == '+') {
		s = s[1:]
	}
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// isDecimal reports whether s is a decimal number in the usual notation:
// [sign] digits [. digits] [e [sign] digits], with digits on at least one
// side of the point. Words such as NaN or Inf are not numbers here.
func isDecimal(s string) bool {
	i := 0
	if i < len(s) && (s[i] == '-' || s[i] == '+') {
		i++
	}
	digits := 0
	for ; i < len(s) && s[i] >= '0' && s[i] <= '9'; i++ {
		digits++
	}
	if i < len(s) && s[i] == '.' {
		i++
		for ; i < len(s) && s[i] >= '0' && s[i] <= '9'; i++ {
			digits++
		}
	}
	if digits == 0 {
		return false
	}
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		i++
		if i < len(s) && (s[i] == '-' || s[i] == '+') {
			i++
		}
		exp := 0
		for ; i < len(s) && s[i] >= '0' && s[i] <= '9'; i++ {
			exp++
		}
		if exp == 0 {
			return false
		}
	}
	return i == len(s)
}

// isNonFinite reports whether s is NaN or an infinity as
// strconv.ParseFloat reads them: nan, or inf or infinity with an optional
// sign, in any case.
func isNonFinite(s string) bool {
	if strings.EqualFold(s, "nan") {
		return true
	}
	if s != "" && (s[0] == '-' || s[0] == '+') {
		s = s[1:]
	}
	return strings.EqualFold(s, "inf") || strings.EqualFold(s, "infinity")
}

// looksTimestamp reports whether s is a date-time ParseTime reads.
func looksTimestamp(s string) bool {
	if len(s) < 19 || s[4] != '-' || s[7] != '-' || (s[10] != 'T' && s[10] != ' ' && s[10] != 't') {
		return false
	}
	_, err := ParseTime(s)
	return err == nil
}

// ParseTime reads a date-time as text sources write and read it: RFC
// 3339 (2024-01-03T10:00:00.5Z, 2024-01-03T12:00:00+02:00, t and z in
// either case), and as SQL and pandas write it, with a space instead of
// the T and maybe without an offset (2024-01-03 10:00:00, read as UTC,
// as DuckDB reads such a TIMESTAMP).
func ParseTime(s string) (time.Time, error) {
	if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
		return t, nil
	}
	if len(s) < 19 || s[4] != '-' || s[7] != '-' || (s[10] != 'T' && s[10] != ' ' && s[10] != 't') {
		return time.Time{}, fmt.Errorf("%q is not a date-time (RFC 3339, or YYYY-MM-DD HH:MM:SS[.fff][offset])", s)
	}
	b := []byte(s)
	b[10] = 'T'
	if n := len(b); b[n-1] == 'z' {
		b[n-1] = 'Z'
	}
	if t, err := time.Parse(time.RFC3339Nano, string(b)); err == nil {
		return t, nil
	}
	// No offset: UTC.
	t, err := time.ParseInLocation("2006-01-02T15:04:05.999999999", string(b), time.UTC)
	if err != nil {
		return time.Time{}, fmt.Errorf("%q is not a date-time (RFC 3339, or YYYY-MM-DD HH:MM:SS[.fff][offset])", s)
	}
	return t, nil
}
