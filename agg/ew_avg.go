package agg

import (
	"encoding/binary"
	"math"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
)

var _ = register(&Def{
	Name:      "ew_avg",
	Signature: "ew_avg(x integer|float, alpha float constant in (0, 1])",
	Doc:       "Exponentially weighted mean Σ w_i x_i / Σ w_i, w_i = (1-alpha)^i, i = 0 for the newest value that is neither NULL nor NaN (pandas ewm adjust=True, ignore_na=True, which reads NaN as missing); NULL when there are none.",
	MinArgs:   2, MaxArgs: 2,
	Bind: func(d *Def, args []Arg) (Func, error) {
		if _, err := numericArg(d, args[0]); err != nil {
			return nil, err
		}
		alpha, err := constFloat(d, args[1], "alpha")
		if err != nil {
			return nil, err
		}
		if !(alpha > 0 && alpha <= 1) {
			return nil, sigError(d, "alpha must be in (0, 1], got %v", alpha)
		}
		f := &ewAvgFunc{col: args[0].Col, decay: 1 - alpha}
		for k := range f.pw {
			f.pw[k] = math.Pow(f.decay, float64(k))
		}
		return f, nil
	},
})

type ewAvgFunc struct {
	col   int
	decay float64 // 1 - alpha
	// pw[k] is math.Pow(decay, k), the factor a merge applies.
	pw [64]float64
}

// pow is math.Pow(f.decay, n).
func (f *ewAvgFunc) pow(n int64) float64 {
	if n < int64(len(f.pw)) {
		return f.pw[n]
	}
	return math.Pow(f.decay, float64(n))
}

func (f *ewAvgFunc) Name() string               { return "ew_avg" }
func (f *ewAvgFunc) ResultType() arrow.DataType { return arrow.PrimitiveTypes.Float64 }
func (f *ewAvgFunc) Retractable() bool          { return false }
func (f *ewAvgFunc) NewState() State            { return &ewAvgState{col: f.col, decay: f.decay} }
func (f *ewAvgFunc) NewWindow() Window          { return &ewAvgWindow{f: f} }

// ewAvgState keeps S = Σ d^i x_i and W = Σ d^i over its n values, i = 0
// for the newest, d = 1-alpha. A newer value scales both by d; merging a
// later state o scales the receiver by d^o.n. Weights only shrink, so the
// sums stay well conditioned (no cancellation for same-sign weights).
type ewAvgState struct {
	col   int
	decay float64
	n     int64
	s, w  float64
}

func (s *ewAvgState) Add(r *Rows, a int64) {
	c := &r.Cols[s.col]
	if i := int(a - r.Base); !c.Null[i] {
		if v := c.Float(i); v == v { // NaN is missing, as in pandas
			s.s = s.s*s.decay + v
			s.w = s.w*s.decay + 1
			s.n++
		}
	}
}

func (s *ewAvgState) Merge(o State) {
	x := o.(*ewAvgState)
	if x.n == 0 {
		return
	}
	f := math.Pow(s.decay, float64(x.n))
	s.s = s.s*f + x.s
	s.w = s.w*f + x.w
	s.n += x.n
}

func (s *ewAvgState) AppendResult(b array.Builder) {
	if s.n == 0 {
		b.AppendNull()
		return
	}
	appendFloat(b, s.s/s.w)
}

func (s *ewAvgState) Reset() { s.n, s.s, s.w = 0, 0, 0 }

func (s *ewAvgState) MarshalBinary() ([]byte, error) {
	out := binary.AppendVarint(nil, s.n)
	out = binary.LittleEndian.AppendUint64(out, math.Float64bits(s.s))
	return binary.LittleEndian.AppendUint64(out, math.Float64bits(s.w)), nil
}

func (s *ewAvgState) UnmarshalBinary(data []byte) error {
	d := decoder{b: data}
	n := d.nonNeg()
	sum, w := d.float(), d.float()
	if err := d.finish(); err != nil {
		return err
	}
	if n > 0 && !(w > 0) {
		return errCorrupt
	}
	s.n, s.s, s.w = n, sum, w
	return nil
}

// RangeEvaluator is implemented by the Funcs whose value over a frame
// depends on how the frame's rows are grouped into partial states (by
// floating-point rounding), and whose Window therefore fixes one
// canonical grouping: EvalRange sets st, a state of the Func, to the
// value over rows [lo, hi) of r (absolute row numbers) followed, when
// cand is not nil, by row 0 of cand numbered hi, grouped exactly as the
// Func's Window groups the frame [lo, hi) (or [lo, hi+1)). Lookups use it
// instead of adding the rows one by one or merging tiles, so that they
// agree bit for bit with the streaming and batch results.
type RangeEvaluator interface {
	EvalRange(st State, r *Rows, lo, hi int64, cand *Rows)
}

// The canonical form of ew_avg over a frame of rows [lo, hi), by absolute
// row number: the frame is cut into the maximal aligned blocks
// [i*2^j, (i+1)*2^j) it contains (the decomposition a segment tree's
// bottom-up walk finds), and their states are merged from the oldest
// block to the newest; a block's state is the merge of its two halves,
// a single row's is the row added to an empty state. The result depends
// only on the frame's rows and their numbers, not on the frames computed
// before it, so a lookup (EvalRange), a streaming or batch window
// (ewAvgWindow) and a restored window give the same bits; each merge
// multiplies by a power of d from one table (ewAvgFunc.pow).

// ewNode is the state of a block: n non-NULL values, s = Σ d^i x_i and
// w = Σ d^i, i = 0 for the newest.
type ewNode struct {
	n    int64
	s, w float64
}

// merge is a followed by b (b's rows are newer).
func (f *ewAvgFunc) merge(a, b ewNode) ewNode {
	if b.n == 0 {
		return a
	}
	if a.n == 0 {
		return b
	}
	p := f.pow(b.n)
	return ewNode{n: a.n + b.n, s: a.s*p + b.s, w: a.w*p + b.w}
}

// leaf is the state of row a of r alone.
func (f *ewAvgFunc) leaf(r *Rows, a int64) ewNode {
	r = r.At(a)
	c := &r.Cols[f.col]
	if i := int(a - r.Base); !c.Null[i] {
		if v := c.Float(i); v == v { // NaN is missing, as in pandas
			return ewNode{n: 1, s: v, w: 1}
		}
	}
	return ewNode{}
}

// ewQuery merges the canonical blocks of rows [l, h); node(j, i) is the
// state of block i of size 2^j.
func ewQuery(f *ewAvgFunc, l, h int64, node func(j int, i int64) ewNode) ewNode {
	var acc ewNode
	var right [64]ewNode
	nr := 0
	for j := 0; l < h; j++ {
		if l&1 == 1 {
			acc = f.merge(acc, node(j, l))
			l++
		}
		if h&1 == 1 {
			h--
			right[nr] = node(j, h)
			nr++
		}
		l >>= 1
		h >>= 1
	}
	for k := nr - 1; k >= 0; k-- {
		acc = f.merge(acc, right[k])
	}
	return acc
}

// EvalRange implements RangeEvaluator.
func (f *ewAvgFunc) EvalRange(st State, r *Rows, lo, hi int64, cand *Rows) {
	end := hi
	if cand != nil {
		end++
	}
	var node func(j int, i int64) ewNode
	node = func(j int, i int64) ewNode {
		if j == 0 {
			if i == hi {
				return f.leaf(cand, cand.Base)
			}
			return f.leaf(r, i)
		}
		return f.merge(node(j-1, 2*i), node(j-1, 2*i+1))
	}
	nd := ewQuery(f, lo, end, node)
	x := st.(*ewAvgState)
	x.n, x.s, x.w = nd.n, nd.s, nd.w
}

// ewAvgWindow is ew_avg's Window: the canonical blocks (see above) of the
// rows it has read, level by level, built as rows enter frames and
// dropped once they start below the frame. Each frame merges O(log n)
// blocks.
type ewAvgWindow struct {
	f *ewAvgFunc
	// lv[j] holds the blocks of size 2^j numbered base, base+1, ...
	lv []ewLevel
	// next is the row after the last one read (valid when lv[0] is not
	// empty).
	next int64
	st   ewAvgState
}

type ewLevel struct {
	base  int64
	nodes []ewNode
}

func (w *ewAvgWindow) node(j int, i int64) ewNode {
	l := &w.lv[j]
	return l.nodes[i-l.base]
}

// push appends row a's leaf and every block it completes.
func (w *ewAvgWindow) push(a int64, nd ewNode) {
	i := a
	for j := 0; ; j++ {
		if j == len(w.lv) {
			w.lv = append(w.lv, ewLevel{})
		}
		l := &w.lv[j]
		if len(l.nodes) == 0 || l.base+int64(len(l.nodes)) != i {
			l.nodes, l.base = l.nodes[:0], i
		}
		l.nodes = append(l.nodes, nd)
		if i&1 == 0 || i-1 < l.base {
			return
		}
		nd = w.f.merge(l.nodes[len(l.nodes)-2], nd)
		i >>= 1
	}
}

// trim drops the blocks starting below row lo, which no later frame uses.
func (w *ewAvgWindow) trim(lo int64) {
	for j := range w.lv {
		l := &w.lv[j]
		first := (lo + (int64(1)<<j - 1)) >> j // first block starting at or after lo
		if k := first - l.base; k > 0 {
			k = min(k, int64(len(l.nodes)))
			l.nodes = l.nodes[k:]
			l.base += k
		}
	}
}

func (w *ewAvgWindow) Eval(r *Rows, lo, hi, ex []int64, bld array.Builder) {
	f := w.f
	for j := range lo {
		l, h := lo[j], hi[j]
		if len(w.lv) == 0 || len(w.lv[0].nodes) == 0 || l > w.next {
			// Nothing read yet, or a gap: start at the frame.
			for k := range w.lv {
				w.lv[k].nodes = w.lv[k].nodes[:0]
			}
			w.next = l
		}
		for ; w.next < h; w.next++ {
			w.push(w.next, f.leaf(r, w.next))
		}
		w.trim(l)
		var nd ewNode
		if ex != nil && ex[j] >= l && ex[j] < h {
			nd = f.merge(ewQuery(f, l, ex[j], w.node), ewQuery(f, ex[j]+1, h, w.node))
		} else {
			nd = ewQuery(f, l, h, w.node)
		}
		w.st.n, w.st.s, w.st.w = nd.n, nd.s, nd.w
		w.st.AppendResult(bld)
	}
}

// MarshalBinary implements WindowCodec: the next row and the blocks.
func (w *ewAvgWindow) MarshalBinary() ([]byte, error) {
	out := binary.AppendVarint(nil, w.next)
	out = binary.AppendUvarint(out, uint64(len(w.lv)))
	for _, l := range w.lv {
		out = binary.AppendVarint(out, l.base)
		out = binary.AppendUvarint(out, uint64(len(l.nodes)))
		for _, nd := range l.nodes {
			out = binary.AppendVarint(out, nd.n)
			out = binary.LittleEndian.AppendUint64(out, math.Float64bits(nd.s))
			out = binary.LittleEndian.AppendUint64(out, math.Float64bits(nd.w))
		}
	}
	return out, nil
}

// UnmarshalBinary implements WindowCodec.
func (w *ewAvgWindow) UnmarshalBinary(data []byte) error {
	d := decoder{b: data}
	w.next = d.varint()
	nl := d.count(1)
	if nl > 64 {
		return errCorrupt
	}
	w.lv = make([]ewLevel, nl)
	for j := range w.lv {
		w.lv[j].base = d.varint()
		n := d.count(17)
		nodes := make([]ewNode, 0, n)
		for range n {
			nodes = append(nodes, ewNode{n: d.nonNeg(), s: d.float(), w: d.float()})
		}
		w.lv[j].nodes = nodes
	}
	return d.finish()
}

var (
	_ WindowCodec    = (*ewAvgWindow)(nil)
	_ RangeEvaluator = (*ewAvgFunc)(nil)
)
