package agg

import (
	"cmp"
	"encoding/binary"
	"maps"
	"math"
	"slices"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
)

var _ = register(&Def{
	Name:      "count_distinct",
	Signature: "count_distinct(x any), also written count(DISTINCT x)",
	Doc:       "Number of distinct non-NULL values of x; 0 when there are none. As in DuckDB, -0 and 0 are one float value, and all NaNs one.",
	MinArgs:   1, MaxArgs: 1,
	Bind: func(d *Def, args []Arg) (Func, error) {
		k, err := valueArg(d, args[0])
		if err != nil {
			return nil, err
		}
		return &countDistinctFunc{col: args[0].Col, kind: k}, nil
	},
})

type countDistinctFunc struct {
	col  int
	kind Kind
}

func (f *countDistinctFunc) Name() string               { return "count_distinct" }
func (f *countDistinctFunc) ResultType() arrow.DataType { return arrow.PrimitiveTypes.Int64 }
func (f *countDistinctFunc) Retractable() bool          { return true }
func (f *countDistinctFunc) NewState() State {
	return &countDistinctState{col: f.col, set: multiset{kind: f.kind}}
}
func (f *countDistinctFunc) NewWindow() Window { return NewRetractWindow(f.NewState) }

// countDistinctState counts distinct values with a value -> multiplicity
// map, so values can be retracted exactly.
type countDistinctState struct {
	col int
	set multiset
}

func (s *countDistinctState) Add(r *Rows, a int64) {
	c := &r.Cols[s.col]
	if i := int(a - r.Base); !c.Null[i] {
		s.set.add(c, i, 1)
	}
}

func (s *countDistinctState) Retract(r *Rows, a int64) {
	c := &r.Cols[s.col]
	if i := int(a - r.Base); !c.Null[i] {
		s.set.add(c, i, -1)
	}
}

func (s *countDistinctState) Merge(o State) { s.set.merge(&o.(*countDistinctState).set) }

func (s *countDistinctState) AppendResult(b array.Builder) { appendInt(b, int64(s.set.distinct())) }

func (s *countDistinctState) Reset() { s.set.reset() }

func (s *countDistinctState) MarshalBinary() ([]byte, error) { return s.set.appendBinary(nil), nil }

func (s *countDistinctState) UnmarshalBinary(data []byte) error {
	d := decoder{b: data}
	t := multiset{kind: s.set.kind}
	t.decode(&d)
	if err := d.finish(); err != nil {
		return err
	}
	s.set = t
	return nil
}

// multiset maps the distinct non-NULL values of one Kind to their
// multiplicities. Integers (and timestamps) are keyed by value, floats by
// their canonical bits (see canonFloat), strings by value, booleans by a
// pair of counters. Maps are made on first use, so an empty multiset costs
// nothing.
type multiset struct {
	kind  Kind
	ints  map[int64]int64
	strs  map[string]int64
	bools [2]int64
}

// key returns the map key of value i of c for the int and float kinds.
func intKey(c *Column, i int) int64 {
	if c.Kind == KindFloat64 {
		return int64(canonFloat(c.F64[i]))
	}
	return c.I64[i]
}

// add changes the multiplicity of value i of c by delta and returns the new
// multiplicity.
func (m *multiset) add(c *Column, i int, delta int64) int64 {
	switch m.kind {
	case KindInt64, KindFloat64:
		return m.addInt(intKey(c, i), delta)
	case KindString:
		return m.addStr(c.Str[i], delta)
	case KindBool:
		return m.addBool(c.Bool[i], delta)
	}
	return 0
}

func (m *multiset) addInt(k, delta int64) int64 {
	if m.ints == nil {
		m.ints = make(map[int64]int64)
	}
	n := m.ints[k] + delta
	if n <= 0 {
		delete(m.ints, k)
		return 0
	}
	m.ints[k] = n
	return n
}

func (m *multiset) addStr(k string, delta int64) int64 {
	if m.strs == nil {
		m.strs = make(map[string]int64)
	}
	n := m.strs[k] + delta
	if n <= 0 {
		delete(m.strs, k)
		return 0
	}
	m.strs[k] = n
	return n
}

func (m *multiset) addBool(k bool, delta int64) int64 {
	i := 0
	if k {
		i = 1
	}
	m.bools[i] = max(m.bools[i]+delta, 0)
	return m.bools[i]
}

// distinct is the number of distinct values.
func (m *multiset) distinct() int {
	n := len(m.ints) + len(m.strs)
	for _, c := range m.bools {
		if c > 0 {
			n++
		}
	}
	return n
}

func (m *multiset) merge(o *multiset) {
	for k, n := range o.ints {
		m.addInt(k, n)
	}
	for k, n := range o.strs {
		m.addStr(k, n)
	}
	m.bools[0] += o.bools[0]
	m.bools[1] += o.bools[1]
}

func (m *multiset) reset() {
	clear(m.ints)
	clear(m.strs)
	m.bools = [2]int64{}
}

// appendBinary encodes the multiset: the number of entries, then (key,
// multiplicity) pairs in key order, so equal multisets encode equally.
func (m *multiset) appendBinary(out []byte) []byte {
	switch m.kind {
	case KindInt64:
		keys := slices.Sorted(maps.Keys(m.ints))
		out = binary.AppendUvarint(out, uint64(len(keys)))
		for _, k := range keys {
			out = binary.AppendVarint(out, k)
			out = binary.AppendVarint(out, m.ints[k])
		}
	case KindFloat64:
		keys := slices.SortedFunc(maps.Keys(m.ints), func(a, b int64) int { return cmp.Compare(uint64(a), uint64(b)) })
		out = binary.AppendUvarint(out, uint64(len(keys)))
		for _, k := range keys {
			out = binary.LittleEndian.AppendUint64(out, uint64(k))
			out = binary.AppendVarint(out, m.ints[k])
		}
	case KindString:
		keys := slices.Sorted(maps.Keys(m.strs))
		out = binary.AppendUvarint(out, uint64(len(keys)))
		for _, k := range keys {
			out = stringOps.enc(out, k)
			out = binary.AppendVarint(out, m.strs[k])
		}
	case KindBool:
		out = binary.AppendVarint(out, m.bools[0])
		out = binary.AppendVarint(out, m.bools[1])
	}
	return out
}

// decode reads what appendBinary wrote into the empty multiset m.
func (m *multiset) decode(d *decoder) {
	switch m.kind {
	case KindInt64, KindFloat64:
		n := d.count(2)
		for range n {
			var k int64
			if m.kind == KindFloat64 {
				f := d.float()
				k = int64(canonFloat(f))
				if uint64(k) != math.Float64bits(f) {
					d.err = errCorrupt
				}
			} else {
				k = d.varint()
			}
			c := d.varint()
			if d.err != nil {
				return
			}
			if _, dup := m.ints[k]; dup || c <= 0 {
				d.err = errCorrupt
				return
			}
			m.addInt(k, c)
		}
	case KindString:
		n := d.count(2)
		for range n {
			k := string(d.bytes())
			c := d.varint()
			if d.err != nil {
				return
			}
			if _, dup := m.strs[k]; dup || c <= 0 {
				d.err = errCorrupt
				return
			}
			m.addStr(k, c)
		}
	case KindBool:
		m.bools[0], m.bools[1] = d.nonNeg(), d.nonNeg()
	default:
		d.err = errCorrupt
	}
}
