package agg

import (
	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
)

// Rows is the window state of one key: the rows that frames may still
// reach, in (event time, arrival) order, held column by column. Rows are
// addressed by absolute row numbers: row a is at position a-Base of every
// slice, so a row keeps its number when older rows are dropped from the
// front.
type Rows struct {
	// Base is the absolute number of the first row held.
	Base int64
	// Ts holds event times in milliseconds.
	Ts []int64
	// Cols holds the aggregate argument columns.
	Cols []Column
	// Older holds rows below Base that are in memory, as segments in
	// ascending order, each addressed like Rows itself; rows between two
	// segments (or between the last one and Base) are not held. A window
	// operator whose long frames keep their middle rows in a state store
	// (paging) holds the rows at each frame's lower edge here. Windows read
	// row a from At(a).
	Older []Rows
}

// At returns the segment holding row a: r itself, or the segment of Older
// that starts at or below a. Rows not held resolve to a segment they are
// not in (reading them is a bug of the caller, as for dropped rows).
func (r *Rows) At(a int64) *Rows {
	if a >= r.Base || len(r.Older) == 0 {
		return r
	}
	for i := len(r.Older) - 1; i > 0; i-- {
		if a >= r.Older[i].Base {
			return &r.Older[i]
		}
	}
	return &r.Older[0]
}

// TsAt returns the event time of row a (see At).
func (r *Rows) TsAt(a int64) int64 {
	s := r.At(a)
	return s.Ts[a-s.Base]
}

// Compacter is implemented by the States that can drop what only a
// retraction would need: after Compact the state still answers, adds and
// merges exactly, as long as nothing is retracted from it. Lookup tiles,
// which are only ever merged, are compacted once complete: top(x, k)
// keeps the values that can still be among the k largest instead of every
// distinct value, so merging a tile costs O(k).
type Compacter interface {
	Compact()
}

// Tiler is implemented by the Windows that can keep their sliding state in
// event-time tiles instead of row by row: SetTile(ms) makes the window
// aggregate the rows of each epoch-aligned tile of that length into one
// state and read a tile's rows again only when the frame's lower edge
// enters it, so its memory grows with the number of tiles in the frame,
// not the number of rows, and it reads only rows at the frame's edges
// (which a paging operator keeps in memory, see Rows.Older). Call it
// before the first Eval.
type Tiler interface {
	SetTile(ms int64)
}

// Len is the number of rows held.
func (r *Rows) Len() int { return len(r.Ts) }

// End is the absolute number one past the last row held.
func (r *Rows) End() int64 { return r.Base + int64(len(r.Ts)) }

// Arg is one bound argument of an aggregate call.
type Arg struct {
	// Type is the argument's Arrow type (nil for *).
	Type arrow.DataType
	// Col is the index of the argument's column in Rows.Cols; -1 for a
	// constant or *.
	Col int
	// Const is the value of a constant argument (int64, float64, string,
	// bool or nil), as in top(x, 3).
	Const any
	// IsConst says the argument is a literal.
	IsConst bool
	// Star is the * of count(*) and count_where(*, c).
	Star bool
}

// Func is an aggregate function bound to its arguments: it knows its
// argument columns and result type, and makes per-key states.
type Func interface {
	// Name is the SQL name, e.g. "sum".
	Name() string
	// ResultType is the Arrow type of the results.
	ResultType() arrow.DataType
	// Retractable reports whether states implement Retractor exactly.
	Retractable() bool
	// NewState returns an empty state.
	NewState() State
	// NewWindow returns an empty sliding window.
	NewWindow() Window
}

// State is an accumulator: the aggregate of a set of rows, which can take
// more rows, merge with another state of the same Func, and be encoded. A
// tile is a State.
type State interface {
	// Add includes row a of r.
	Add(r *Rows, a int64)
	// Merge includes the rows of o, a state of the same Func. For
	// order-sensitive aggregates (first_value, drawdown ...) o's rows come
	// after the receiver's. o is not modified.
	Merge(o State)
	// AppendResult appends the aggregate's value to b, a builder of the
	// Func's ResultType.
	AppendResult(b array.Builder)
	// Reset empties the state.
	Reset()
	// MarshalBinary encodes the state.
	MarshalBinary() ([]byte, error)
	// UnmarshalBinary replaces the state with a decoded one.
	UnmarshalBinary(data []byte) error
}

// RangeAdder is implemented by the States that can add a run of rows in
// one call: AddRange(r, lo, hi) is Add(r, a) for a = lo, ..., hi-1 in
// that order, bit for bit, over rows r holds itself (r.Base <= lo <= hi
// <= r.End(); not rows of r.Older). Callers that add many consecutive
// rows (point-in-time lookups over frames not worth tiling and the edges
// of tiled ones, lookup tiles being built, the frames of rows applied
// late) save an interface call and a segment lookup a row, and the
// state's loop runs over the column's values directly.
type RangeAdder interface {
	AddRange(r *Rows, lo, hi int64)
}

// Retractor is implemented by states of retractable aggregates: Retract
// exactly undoes an earlier Add of the same row.
type Retractor interface {
	Retract(r *Rows, a int64)
}

// Window computes an aggregate over frames that slide forward over the
// rows of one key.
type Window interface {
	// Eval appends to b, for each j, the aggregate over rows [lo[j], hi[j])
	// of r, leaving out row ex[j] when ex is not nil and
	// lo[j] <= ex[j] < hi[j]. Row numbers are absolute (see Rows). Within a
	// call and across calls on one Window, lo and hi never decrease.
	//
	// The caller drops rows from the front of r as soon as no frame needs
	// them: rows below a bounded frame's lower bound, and rows an unbounded
	// frame has absorbed (its lower bound never moves). So a Window reads a
	// row only in the call in which the row enters the frame, is evicted
	// from it, or is left out as ex; any value it needs later it copies.
	Eval(r *Rows, lo, hi, ex []int64, b array.Builder)
}
