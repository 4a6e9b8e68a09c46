package pipeline

import (
	"math"
	"strings"

	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/volga-go/volga/window"
)

// FeatureRow holds the features of one lookup, as Live.LookupInto writes
// them: numbers unboxed, so that a FeatureRow reused from lookup to
// lookup lets lookups of numeric features allocate nothing. Read it with
// Float64, Int64 and IsNull, or Value for any feature (as Lookup's
// Values hold it: boxing a number allocates); their i is a position in
// Names, from 0 to Len()-1 (Index finds it by name), and panics outside.
// The zero FeatureRow is ready to use; a FeatureRow is not safe for
// concurrent use.
type FeatureRow struct {
	names     []string
	vals      []featureValue
	watermark int64
}

// featureValue is one feature: NULL, a float64 or int64 in bits, or any
// other Go value (strings, times, lists, maps) in other.
type featureValue struct {
	kind  featureKind
	bits  uint64
	other any
}

type featureKind uint8

const (
	featureNull featureKind = iota
	featureFloat
	featureInt
	featureOther
)

// Len returns the number of features.
func (f *FeatureRow) Len() int { return len(f.vals) }

// Names returns the feature names, in SELECT order (shared between rows:
// do not modify).
func (f *FeatureRow) Names() []string { return f.names }

// Index returns the position of the named feature (case-insensitive), or
// -1.
func (f *FeatureRow) Index(name string) int {
	for i, n := range f.names {
		if strings.EqualFold(n, name) {
			return i
		}
	}
	return -1
}

// Watermark is the event time (ms) up to which the state was complete;
// rows newer than it may not be counted yet (LookupResult.Watermark).
func (f *FeatureRow) Watermark() int64 { return f.watermark }

// IsNull reports whether feature i is NULL (an aggregate over an empty
// frame, such as sum or max).
func (f *FeatureRow) IsNull(i int) bool { return f.vals[i].kind == featureNull }

// Float64 returns feature i and true when it is a float64 that is not
// NULL (sum, avg and max of a DOUBLE column, for example); false
// otherwise.
func (f *FeatureRow) Float64(i int) (float64, bool) {
	v := f.vals[i]
	return math.Float64frombits(v.bits), v.kind == featureFloat
}

// Int64 returns feature i and true when it is an int64 that is not NULL
// (count, for example); false otherwise.
func (f *FeatureRow) Int64(i int) (int64, bool) {
	v := f.vals[i]
	return int64(v.bits), v.kind == featureInt
}

// Value returns feature i as LookupResult.Values holds it: int64,
// float64, string, bool, time.Time, nil for NULL, []any for lists,
// map[string]any for structs and []sink.MapEntry (ascending keys) for
// maps.
func (f *FeatureRow) Value(i int) any {
	switch v := f.vals[i]; v.kind {
	case featureFloat:
		return math.Float64frombits(v.bits)
	case featureInt:
		return int64(v.bits)
	case featureOther:
		return v.other
	}
	return nil
}

// Result returns the features as a LookupResult (its Values newly
// allocated).
func (f *FeatureRow) Result() LookupResult {
	res := LookupResult{Names: f.names, Values: make([]any, len(f.vals)), Watermark: f.watermark}
	for i := range f.vals {
		res.Values[i] = f.Value(i)
	}
	return res
}

// reset makes f a row of the features names, every one NULL, at the
// largest watermark.
func (f *FeatureRow) reset(names []string) {
	f.names = names
	if cap(f.vals) < len(names) {
		f.vals = make([]featureValue, len(names))
	}
	f.vals = f.vals[:len(names)]
	clear(f.vals)
	f.watermark = window.End
}

// put sets feature i to the single value b holds and empties b: numbers
// of the common result types without boxing, other values through an
// array (see sink.Value).
func (f *FeatureRow) put(i int, b array.Builder) {
	v := &f.vals[i]
	*v = featureValue{}
	if b.Len() == 1 {
		switch x := b.(type) {
		case *array.Float64Builder:
			if !x.IsNull(0) {
				v.kind, v.bits = featureFloat, math.Float64bits(x.Value(0))
			}
			x.Resize(0)
			return
		case *array.Int64Builder:
			if !x.IsNull(0) {
				v.kind, v.bits = featureInt, uint64(x.Value(0))
			}
			x.Resize(0)
			return
		}
	}
	arr := b.NewArray()
	defer arr.Release()
	if x := goValue(arr, 0); x != nil {
		v.kind, v.other = featureOther, x
	}
}
