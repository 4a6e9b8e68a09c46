package pipeline

import (
	"fmt"

	"github.com/xwb1989/sqlparser"
)

// FrameKind says how a window frame is measured: in event time (RANGE) or
// in rows (ROWS).
type FrameKind int

const (
	// FrameRange measures the frame in event time.
	FrameRange FrameKind = iota
	// FrameRows measures the frame in rows of the same key.
	FrameRows
)

// Frame is the extent of a sliding window relative to the current row.
//
// For FrameRange the frame of a row at time t is every row of the same key
// with t-Preceding <= ts <= t-EndPreceding (all of ts <= t-EndPreceding
// when Unbounded). EndPreceding == 0 means CURRENT ROW, peers included.
// For FrameRows the frame is the current row and the Preceding rows before
// it in (event time, arrival) order; EndPreceding is always 0.
type Frame struct {
	Kind FrameKind
	// Unbounded is RANGE BETWEEN UNBOUNDED PRECEDING.
	Unbounded bool
	// Preceding is the start of the frame: milliseconds for RANGE, a row
	// count for ROWS.
	Preceding int64
	// EndPreceding is the end of the frame in milliseconds before the
	// current row (RANGE only); 0 is CURRENT ROW.
	EndPreceding int64
	// ExcludeCurrent is EXCLUDE CURRENT ROW: the current row itself (not its
	// peers) is left out of its frame.
	ExcludeCurrent bool
}

// String renders the frame in the SQL dialect.
func (f Frame) String() string {
	var s string
	switch {
	case f.Kind == FrameRows:
		s = fmt.Sprintf("ROWS BETWEEN %d PRECEDING AND CURRENT ROW", f.Preceding)
	case f.Unbounded:
		s = "RANGE BETWEEN UNBOUNDED PRECEDING AND " + endString(f.EndPreceding)
	default:
		s = fmt.Sprintf("RANGE BETWEEN INTERVAL '%d' MILLISECOND PRECEDING AND %s", f.Preceding, endString(f.EndPreceding))
	}
	if f.ExcludeCurrent {
		s += " EXCLUDE CURRENT ROW"
	}
	return s
}

func endString(ms int64) string {
	if ms == 0 {
		return "CURRENT ROW"
	}
	return fmt.Sprintf("INTERVAL '%d' MILLISECOND PRECEDING", ms)
}

// WindowSpec is a keyed sliding window: PARTITION BY, ORDER BY and frame.
type WindowSpec struct {
	// Name is the WINDOW clause name; empty for an inline OVER (...).
	Name string
	// PartitionBy lists the key columns.
	PartitionBy []string
	// OrderBy is the event-time column.
	OrderBy string
	// Frame is the frame of every row.
	Frame Frame
	// Pos is the byte offset of the spec in the SQL text (-1 when built in Go).
	Pos int
}

// Expr is an unbound scalar expression: the parsed AST and the text it was
// written as (used in error messages and default column names).
type Expr struct {
	AST  sqlparser.Expr
	Text string
	// Pos is the byte offset of Text in the SQL text, -1 when unknown.
	Pos int
}

// AggCall is one aggregate function call over a window.
type AggCall struct {
	// Func is the function name, lower case (count, sum, topn_frequency, ...).
	Func string
	// Star is true for count(*) and the * argument of count_where(*, c).
	Star bool
	// Distinct is count(DISTINCT x).
	Distinct bool
	// Args are the arguments (without the * of Star).
	Args []*Expr
	// Window is the window the call is evaluated over (nil inside a GROUP BY query).
	Window *WindowSpec
	// Text is the call as written, e.g. "sum(amount)".
	Text string
	// Pos is the byte offset of the call in the SQL text, -1 when unknown.
	Pos int
}

// Item is one output column: either a scalar expression or an aggregate.
type Item struct {
	// Name is the output column name: the alias, or a name derived from the text.
	Name string
	// Expr is set for a scalar projection.
	Expr *Expr
	// Agg is set for an aggregate.
	Agg *AggCall
}

// GroupWindowKind is tumble or hop.
type GroupWindowKind int

const (
	// GroupTumble is tumble(ts, size).
	GroupTumble GroupWindowKind = iota + 1
	// GroupHop is hop(ts, slide, size).
	GroupHop
)

// GroupWindow is the tumble/hop part of a GROUP BY.
type GroupWindow struct {
	Kind    GroupWindowKind
	TimeCol string
	SizeMs  int64
	SlideMs int64 // == SizeMs for tumble
	KeyCols []string
	Pos     int
}

// Plan is the logical plan of a pipeline: what both the SQL front end and
// the Go builder produce, before it is bound to a source schema.
type Plan struct {
	// SQL is the statement the plan came from ("" when built in Go).
	SQL string
	// Table is the source table name.
	Table string
	// Where filters input rows before windowing (nil for none).
	Where *Expr
	// Items are the output columns, in order.
	Items []Item
	// Windows are the distinct window specs used by Items (named and inline).
	Windows []*WindowSpec
	// Group is set for GROUP BY tumble/hop queries.
	Group *GroupWindow
}

// OrderBy returns the event-time column the query names: the tumble/hop
// time column, or the ORDER BY column of its first window ("" for a query
// without windows). (Compiling checks that every window orders by it.)
func (p *Plan) OrderBy() string {
	if p.Group != nil {
		return p.Group.TimeCol
	}
	if len(p.Windows) > 0 {
		return p.Windows[0].OrderBy
	}
	return ""
}
