package agg

import (
	"encoding/binary"
	"math"
	"slices"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
)

var _ = register(&Def{
	Name:      "approx_percentile",
	Signature: "approx_percentile(x integer|float, q float constant in [0, 1])",
	Doc:       "Quantile q of the non-NULL values of x, interpolated linearly between closest ranks; exact up to 1024 values, then a compactor sketch with a documented rank error.",
	MinArgs:   2, MaxArgs: 2,
	Bind: func(d *Def, args []Arg) (Func, error) {
		if _, err := numericArg(d, args[0]); err != nil {
			return nil, err
		}
		q, err := constFloat(d, args[1], "q")
		if err != nil {
			return nil, err
		}
		if !(q >= 0 && q <= 1) {
			return nil, sigError(d, "q must be in [0, 1], got %v", q)
		}
		return &percentileFunc{col: args[0].Col, q: q}, nil
	},
})

// pctK is the capacity of one sketch level: states are exact up to pctK
// values.
const pctK = 1024

// percentileFunc is approx_percentile. The quantile of n sorted values v
// is v[⌊p⌋] + (p-⌊p⌋)(v[⌊p⌋+1]-v[⌊p⌋]) with p = q(n-1) (as DuckDB's
// quantile_cont and numpy's default).
//
// Sliding windows are exact: the frame's values sit in an indexable skip
// list, O(log n) per row. States (tiles) are exact up to 1024 values and
// then become a deterministic mergeable compactor sketch: level l holds
// values of weight 2^l, and a level past 1024 values is sorted and every
// other value, from an alternating offset, moves up one level. Each
// compaction at level l shifts the rank of any value by at most 2^l, and
// there are at most N/(1024·2^l) of them, so the rank of the returned value
// is within N·H/1024 of the exact one, H = number of levels ≤
// ⌈log2(N/1024)⌉+1 (e.g. ≤ 0.6% of N for N = 10^5, ≤ 1% for 10^6; typical
// errors are far smaller).
type percentileFunc struct {
	col int
	q   float64
}

func (f *percentileFunc) Name() string               { return "approx_percentile" }
func (f *percentileFunc) ResultType() arrow.DataType { return arrow.PrimitiveTypes.Float64 }
func (f *percentileFunc) Retractable() bool          { return false }
func (f *percentileFunc) NewState() State            { return &percentileState{col: f.col, q: f.q} }
func (f *percentileFunc) NewWindow() Window {
	return &percentileWindow{col: f.col, q: f.q, sl: newSkiplist(floatLess)}
}

// interpolate returns the quantile q of n sorted values read by at.
func interpolate(q float64, n int, at func(int) float64) float64 {
	p := q * float64(n-1)
	i := int(p)
	v := at(i)
	if frac := p - float64(i); frac > 0 && i+1 < n {
		v += frac * (at(i+1) - v)
	}
	return v
}

// percentileWindow keeps the frame's non-NULL values in an indexable skip
// list; rows entering are inserted, rows leaving deleted.
type percentileWindow struct {
	col    int
	q      float64
	sl     *skiplist[float64]
	lo, hi int64
}

func (w *percentileWindow) value(r *Rows, a int64) (float64, bool) {
	r = r.At(a)
	c := &r.Cols[w.col]
	i := int(a - r.Base)
	if c.Null[i] {
		return 0, false
	}
	return c.Float(i), true
}

func (w *percentileWindow) Eval(r *Rows, lo, hi, ex []int64, b array.Builder) {
	for j := range lo {
		l, h := lo[j], hi[j]
		if l >= w.hi {
			w.sl.Reset()
			w.lo, w.hi = l, l
		}
		for ; w.hi < h; w.hi++ {
			if v, ok := w.value(r, w.hi); ok {
				w.sl.Insert(v)
			}
		}
		for ; w.lo < l; w.lo++ {
			if v, ok := w.value(r, w.lo); ok {
				w.sl.Delete(v)
			}
		}
		var exv float64
		var exok bool
		if ex != nil && ex[j] >= l && ex[j] < h {
			if exv, exok = w.value(r, ex[j]); exok {
				w.sl.Delete(exv)
			}
		}
		if n := w.sl.Len(); n == 0 {
			b.AppendNull()
		} else {
			appendFloat(b, interpolate(w.q, n, w.sl.At))
		}
		if exok {
			w.sl.Insert(exv)
		}
	}
}

// percentileState is the compactor sketch described at percentileFunc.
type percentileState struct {
	col    int
	q      float64
	n      int64       // values added
	levels [][]float64 // levels[l]: values of weight 2^l
	parity []uint8     // next compaction offset per level
	buf    []weighted
}

type weighted struct {
	v float64
	w int64
}

func (s *percentileState) Add(r *Rows, a int64) {
	c := &r.Cols[s.col]
	i := int(a - r.Base)
	if c.Null[i] {
		return
	}
	if len(s.levels) == 0 {
		s.levels, s.parity = [][]float64{nil}, []uint8{0}
	}
	s.levels[0] = append(s.levels[0], c.Float(i))
	s.n++
	if len(s.levels[0]) > pctK {
		s.compact()
	}
}

func floatCmp(a, b float64) int {
	switch {
	case floatLess(a, b):
		return -1
	case floatLess(b, a):
		return 1
	}
	return 0
}

// compact halves every level holding more than pctK values into the next
// one, lowest first, so that up to pctK values stay exact.
func (s *percentileState) compact() {
	for l := 0; l < len(s.levels); l++ {
		lv := s.levels[l]
		if len(lv) <= pctK {
			continue
		}
		slices.SortFunc(lv, floatCmp)
		if l+1 == len(s.levels) {
			s.levels = append(s.levels, nil)
			s.parity = append(s.parity, 0)
		}
		m := len(lv) &^ 1 // an odd value out stays
		for i := int(s.parity[l]); i < m; i += 2 {
			s.levels[l+1] = append(s.levels[l+1], lv[i])
		}
		s.parity[l] ^= 1
		rest := copy(lv, lv[m:])
		s.levels[l] = lv[:rest]
	}
}

func (s *percentileState) Merge(o State) {
	x := o.(*percentileState)
	if x.n == 0 {
		return
	}
	for len(s.levels) < len(x.levels) {
		s.levels = append(s.levels, nil)
		s.parity = append(s.parity, 0)
	}
	for l, lv := range x.levels {
		s.levels[l] = append(s.levels[l], lv...)
	}
	s.n += x.n
	s.compact()
}

func (s *percentileState) AppendResult(b array.Builder) {
	if s.n == 0 {
		b.AppendNull()
		return
	}
	if len(s.levels) == 1 { // exact
		lv := s.levels[0]
		slices.SortFunc(lv, floatCmp)
		appendFloat(b, interpolate(s.q, len(lv), func(i int) float64 { return lv[i] }))
		return
	}
	s.buf = s.buf[:0]
	var total int64
	for l, lv := range s.levels {
		for _, v := range lv {
			s.buf = append(s.buf, weighted{v, 1 << l})
			total += 1 << l
		}
	}
	slices.SortFunc(s.buf, func(a, b weighted) int { return floatCmp(a.v, b.v) })
	// Value at expanded rank i (each value repeated by its weight).
	k, cum := 0, s.buf[0].w
	at := func(i int) float64 {
		for int64(i) >= cum && k+1 < len(s.buf) {
			k++
			cum += s.buf[k].w
		}
		return s.buf[k].v
	}
	appendFloat(b, interpolate(s.q, int(total), at))
}

func (s *percentileState) Reset() {
	s.n = 0
	s.levels, s.parity = s.levels[:0], s.parity[:0]
}

// MarshalBinary writes n, the number of levels, then per level its
// parity, its length and its values in ascending order (the order within
// a level carries no meaning, so equal states encode equally).
func (s *percentileState) MarshalBinary() ([]byte, error) {
	out := binary.AppendVarint(nil, s.n)
	out = binary.AppendUvarint(out, uint64(len(s.levels)))
	var sorted []float64
	for l, lv := range s.levels {
		// Sorted in a copy: encoding changes nothing (a checkpoint's
		// encoder and the operator may encode one state at once).
		sorted = append(sorted[:0], lv...)
		slices.SortFunc(sorted, floatCmp)
		lv = sorted
		out = append(out, s.parity[l])
		out = binary.AppendUvarint(out, uint64(len(lv)))
		for _, v := range lv {
			out = binary.LittleEndian.AppendUint64(out, math.Float64bits(v))
		}
	}
	return out, nil
}

func (s *percentileState) UnmarshalBinary(data []byte) error {
	d := decoder{b: data}
	t := percentileState{col: s.col, q: s.q}
	t.n = d.nonNeg()
	nl := d.count(2)
	if nl > 40 {
		return errCorrupt
	}
	var weight int64
	for l := range nl {
		p := d.byte()
		m := d.count(8)
		if d.err != nil || p > 1 || m > pctK {
			return errCorrupt
		}
		lv := make([]float64, m)
		for i := range lv {
			lv[i] = d.float()
		}
		t.levels = append(t.levels, lv)
		t.parity = append(t.parity, p)
		weight += int64(m) << l
	}
	if err := d.finish(); err != nil {
		return err
	}
	if weight != t.n {
		return errCorrupt
	}
	*s = t
	return nil
}
