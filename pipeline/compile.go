package pipeline

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/xwb1989/sqlparser"

	"github.com/volga-go/volga/agg"
	"github.com/volga-go/volga/internal/expr"
	"github.com/volga-go/volga/internal/sqlwin"
	"github.com/volga-go/volga/window"
)

// Names of the hidden columns the engine adds to every row.
const (
	tsColName  = "__volga_ts"
	seqColName = "__volga_seq"
)

// Compiled is a plan bound to a source schema: the column layout the
// operators work on and the operators' configurations.
type Compiled struct {
	// Plan is the logical plan.
	Plan *Plan
	// Source is the source table's schema.
	Source *arrow.Schema
	// Output is the schema of the pipeline's output.
	Output *arrow.Schema
	// TimeColumn is the event-time column ("" for a stateless query).
	TimeColumn string

	timeIdx   int // in Source, -1 when none
	where     expr.Expr
	evals     []expr.Expr // computed columns appended after ts and seq
	evalText  []string    // each one's text as the query wrote it, for errors
	prep      *arrow.Schema
	stages    []*stage
	outIdx    []int // columns of the last stage's output, one per item
	stateless bool
	probeIdx  int // > 0 in a backfill: output only the rows flagged there
}

// stage is one window operator: the windows sharing a PARTITION BY set.
type stage struct {
	keys    []string
	cfg     window.Config       // a sliding-window stage
	group   *window.GroupConfig // or a tumble/hop stage
	in, out *arrow.Schema
	// tsCol and seqCol locate event time and sequence in out.
	tsCol, seqCol int
	// items are the output items of the stage's result columns, in order.
	items []int
}

// keyCols are the input columns the stage partitions rows by.
func (s *stage) keyCols() []int {
	if s.group != nil {
		return s.group.KeyCols
	}
	return s.cfg.KeyCols
}

// Compile binds p to the schema of its source table. Unknown columns and
// functions, wrong argument counts or types are reported as *SQLError
// values positioned in the SQL text when the plan came from SQL.
func Compile(p *Plan, schema *arrow.Schema, timeColumn string) (c *Compiled, err error) {
	defer func() {
		if r := recover(); r != nil {
			c, err = nil, fmt.Errorf("volga: internal error while compiling the pipeline: %v", r)
		}
	}()
	if p == nil || schema == nil {
		return nil, errors.New("volga: nil plan or schema")
	}
	b := &binder{p: p, src: schema, c: &Compiled{Plan: p, Source: schema, timeIdx: -1}}
	if err := b.bind(timeColumn); err != nil {
		return nil, err
	}
	return b.c, nil
}

type binder struct {
	p      *Plan
	src    *arrow.Schema
	c      *Compiled
	fields []arrow.Field // prep layout under construction
	byText map[string]int
}

// column returns the index of a source column, case-insensitively.
func (b *binder) column(name string, pos int) (int, error) {
	if idx := b.src.FieldIndices(name); len(idx) == 1 {
		return idx[0], nil
	}
	found := -1
	for i, f := range b.src.Fields() {
		if strings.EqualFold(f.Name, name) {
			if found >= 0 {
				return -1, b.p.ErrorAfter(pos, name, "column %q is ambiguous", name)
			}
			found = i
		}
	}
	if found < 0 {
		return -1, b.p.ErrorAfter(pos, name, "unknown column %q (table %s has %s)", name, b.p.Table, strings.Join(fieldNames(b.src), ", "))
	}
	return found, nil
}

func fieldNames(s *arrow.Schema) []string {
	out := make([]string, s.NumFields())
	for i, f := range s.Fields() {
		out[i] = f.Name
	}
	return out
}

// exprError turns an expression compile error into a positioned SQLError.
func (b *binder) exprError(e *Expr, err error) error {
	var xe *expr.Error
	if errors.As(err, &xe) && xe.Text != "" {
		near := xe.Text
		msg := xe.Msg
		if xe.Kind == expr.ErrUnknownColumn {
			// sqlparser renders identifiers in backquotes only when needed;
			// the message names the column.
			near = strings.Trim(near, "`")
			if strings.HasPrefix(msg, "unknown column ") {
				msg += fmt.Sprintf(" (table %s has %s)", b.p.Table, strings.Join(fieldNames(b.src), ", "))
			}
		}
		return b.p.ErrorAfter(e.Pos, near, "%s", msg)
	}
	return b.p.ErrorAfter(e.Pos, e.Text, "%v", err)
}

// compute adds a computed column for e to the prep layout (once per
// distinct text) and returns its index.
func (b *binder) compute(e *Expr) (int, arrow.DataType, error) {
	key := strings.ToLower(e.Text)
	if key == "" {
		key = sqlparser.String(e.AST)
	}
	if i, ok := b.byText[key]; ok {
		return i, b.fields[i].Type, nil
	}
	ev, err := expr.Compile(e.AST, b.src)
	if err != nil {
		return 0, nil, b.exprError(e, err)
	}
	i := len(b.fields)
	b.fields = append(b.fields, arrow.Field{Name: fmt.Sprintf("__volga_c%d", len(b.c.evals)), Type: ev.Type(), Nullable: true})
	b.c.evals = append(b.c.evals, ev)
	text := e.Text
	if text == "" {
		text = ev.String()
	}
	b.c.evalText = append(b.c.evalText, text)
	b.byText[key] = i
	return i, ev.Type(), nil
}

func (b *binder) bind(timeColumn string) error {
	p := b.p
	// Event time: the ORDER BY column shared by every window, or the
	// tumble/hop time column.
	// timePos is where the query names it, so that an error about it
	// points there and not at an alias of the same name.
	timePos := -1
	if p.Group != nil {
		timeColumn, timePos = p.Group.TimeCol, p.Group.Pos
	}
	for _, w := range p.Windows {
		if timeColumn == "" {
			timeColumn, timePos = w.OrderBy, w.Pos
		} else if !strings.EqualFold(timeColumn, w.OrderBy) {
			return p.ErrorAfter(w.Pos, w.OrderBy, "every window must ORDER BY the event-time column %q, not %q", timeColumn, w.OrderBy)
		}
	}
	if timeColumn != "" {
		i, err := b.column(timeColumn, timePos)
		if err != nil {
			return err
		}
		switch b.src.Field(i).Type.ID() {
		case arrow.TIMESTAMP, arrow.INT64:
		default:
			return p.ErrorAfter(timePos, timeColumn, "event-time column %q must be a timestamp or int64 epoch milliseconds, not %s", timeColumn, b.src.Field(i).Type)
		}
		b.c.timeIdx = i
		b.c.TimeColumn = b.src.Field(i).Name
	}
	if p.Where != nil {
		ev, err := expr.Compile(p.Where.AST, b.src)
		if err != nil {
			return b.exprError(p.Where, err)
		}
		if ev.Type().ID() != arrow.BOOL {
			return p.ErrorAfter(p.Where.Pos, p.Where.Text, "WHERE must be a boolean condition, not %s", ev.Type())
		}
		b.c.where = ev
	}

	// prep layout: source columns, event time, sequence, computed columns.
	b.fields = slices.Clone(b.src.Fields())
	b.fields = append(b.fields,
		arrow.Field{Name: tsColName, Type: arrow.PrimitiveTypes.Int64},
		arrow.Field{Name: seqColName, Type: arrow.PrimitiveTypes.Int64})
	b.byText = map[string]int{}
	tsIdx, seqIdx := b.src.NumFields(), b.src.NumFields()+1

	if p.Group != nil {
		return b.bindGroup(tsIdx, seqIdx)
	}

	// Output items: projections become computed columns (plain columns
	// are read as they are).
	itemCol := make([]int, len(p.Items)) // prep index of projections, -1 for aggregates
	for k, it := range p.Items {
		itemCol[k] = -1
		if it.Expr == nil {
			continue
		}
		if cn, ok := it.Expr.AST.(*sqlparser.ColName); ok {
			i, err := b.column(cn.Name.String(), it.Expr.Pos)
			if err != nil {
				return err
			}
			itemCol[k] = i
			continue
		}
		i, _, err := b.compute(it.Expr)
		if err != nil {
			return err
		}
		itemCol[k] = i
	}

	// Group windows into stages by PARTITION BY set, in order of appearance.
	type callRef struct {
		item int
		call *AggCall
	}
	type stageSpec struct {
		keys    []string
		pos     int // of the first window's specification, for errors
		windows []*WindowSpec
		calls   [][]callRef
	}
	var specs []*stageSpec
	keyOf := func(keys []string) string {
		l := make([]string, len(keys))
		for i, k := range keys {
			l[i] = strings.ToLower(k)
		}
		return strings.Join(l, "\x00")
	}
	for k, it := range p.Items {
		if it.Agg == nil {
			continue
		}
		w := it.Agg.Window
		if w == nil {
			return p.ErrorAfter(it.Agg.Pos, it.Agg.Text, "aggregate %s needs an OVER clause", it.Agg.Func)
		}
		var st *stageSpec
		for _, s := range specs {
			if keyOf(s.keys) == keyOf(w.PartitionBy) {
				st = s
			}
		}
		if st == nil {
			st = &stageSpec{keys: w.PartitionBy, pos: w.Pos}
			specs = append(specs, st)
		}
		wi := slices.Index(st.windows, w)
		if wi < 0 {
			st.windows = append(st.windows, w)
			st.calls = append(st.calls, nil)
			wi = len(st.windows) - 1
		}
		st.calls[wi] = append(st.calls[wi], callRef{item: k, call: it.Agg})
	}
	if len(specs) == 0 {
		b.c.stateless = true
	}

	// Bind every call: its arguments become computed columns, kept in the
	// stage's window state at the positions ArgCols gives them.
	type built struct {
		cfg   window.Config
		order []int // item of each result column
	}
	var builds []built
	for _, st := range specs {
		cfg := window.Config{TsCol: tsIdx, SeqCol: seqIdx}
		for _, key := range st.keys {
			i, err := b.column(key, st.pos)
			if err != nil {
				return err
			}
			cfg.KeyCols = append(cfg.KeyCols, i)
		}
		argPos := map[int]int{}
		var order []int
		for wi, w := range st.windows {
			spec := window.Spec{Frame: window.Frame{
				Rows: w.Frame.Kind == FrameRows, Unbounded: w.Frame.Unbounded,
				Preceding: w.Frame.Preceding, EndPreceding: w.Frame.EndPreceding,
				ExcludeCurrent: w.Frame.ExcludeCurrent,
			}}
			for _, cr := range st.calls[wi] {
				f, err := b.bindCall(cr.call, &cfg.ArgCols, argPos)
				if err != nil {
					return err
				}
				spec.Aggs = append(spec.Aggs, f)
				cfg.ResultNames = append(cfg.ResultNames, fmt.Sprintf("__volga_r%d", cr.item))
				order = append(order, cr.item)
			}
			cfg.Windows = append(cfg.Windows, spec)
		}
		builds = append(builds, built{cfg: cfg, order: order})
	}
	b.c.prep = arrow.NewSchema(b.fields, nil)

	// Stages: each stage's input is the previous stage's output.
	in := b.c.prep
	resultCol := map[int]int{} // item -> column in the final layout
	for k, bl := range builds {
		op, err := window.New(bl.cfg, in)
		if err != nil {
			return err
		}
		out := op.OutSchema()
		op.Close()
		for j, item := range bl.order {
			resultCol[item] = in.NumFields() + j
		}
		b.c.stages = append(b.c.stages, &stage{keys: specs[k].keys, cfg: bl.cfg, in: in, out: out, tsCol: tsIdx, seqCol: seqIdx, items: bl.order})
		in = out
	}

	// Output: items in SELECT order.
	var outFields []arrow.Field
	for k, it := range p.Items {
		var idx int
		if it.Agg != nil {
			idx = resultCol[k]
		} else {
			idx = itemCol[k]
		}
		b.c.outIdx = append(b.c.outIdx, idx)
		f := in.Field(idx)
		outFields = append(outFields, arrow.Field{Name: it.Name, Type: f.Type, Nullable: true})
	}
	if err := checkDuplicateNames(p, outFields); err != nil {
		return err
	}
	b.c.Output = arrow.NewSchema(outFields, nil)
	return nil
}

// bindCall binds an aggregate call: its column arguments become computed
// columns of the prep layout, appended to argCols (once each, positions in
// argPos) so that the function reads them from window state.
func (b *binder) bindCall(call *AggCall, argCols *[]int, argPos map[int]int) (agg.Func, error) {
	p := b.p
	name := call.Func
	if call.Distinct {
		if name != "count" {
			return nil, p.ErrorAfter(call.Pos, call.Text, "DISTINCT is only supported in count(DISTINCT x)")
		}
		name = "count_distinct"
	}
	if _, ok := agg.Lookup(name); !ok {
		return nil, p.ErrorAfter(call.Pos, call.Func, "unknown aggregate function %q", call.Func)
	}
	var args []agg.Arg
	if call.Star {
		args = append(args, agg.Arg{Star: true, Col: -1})
	}
	for _, a := range call.Args {
		if v, ok := constValue(a.AST); ok {
			args = append(args, agg.Arg{IsConst: true, Const: v, Col: -1, Type: constType(v)})
			continue
		}
		i, t, err := b.compute(a)
		if err != nil {
			return nil, err
		}
		pos, ok := argPos[i]
		if !ok {
			pos = len(*argCols)
			argPos[i] = pos
			*argCols = append(*argCols, i)
		}
		args = append(args, agg.Arg{Type: t, Col: pos})
	}
	f, err := agg.Bind(name, args)
	if err != nil {
		return nil, p.ErrorAfter(call.Pos, call.Text, "%v", err)
	}
	return f, nil
}

// bindGroup binds a GROUP BY key, tumble/hop query: output columns are
// keys, window_start, window_end and aggregates.
func (b *binder) bindGroup(tsIdx, seqIdx int) error {
	p, g := b.p, b.p.Group
	cfg := window.GroupConfig{TsCol: tsIdx, SeqCol: seqIdx, SizeMs: g.SizeMs, SlideMs: g.SlideMs}
	if g.SlideMs > g.SizeMs {
		return p.ErrorAfter(g.Pos, "hop", "hop slide (%dms) must not be longer than its size (%dms)", g.SlideMs, g.SizeMs)
	}
	cfg.TimeType = arrow.PrimitiveTypes.Int64
	if tt, ok := b.src.Field(b.c.timeIdx).Type.(*arrow.TimestampType); ok {
		cfg.TimeType = &arrow.TimestampType{Unit: arrow.Millisecond, TimeZone: tt.TimeZone}
	}
	keyPos := map[string]int{}
	// An unknown key is reported where GROUP BY names it, not at an alias
	// of the same name in the select list.
	keysAt := -1
	if p.SQL != "" {
		keysAt = sqlwin.Find(p.SQL, "GROUP BY", 0)
	}
	for j, key := range g.KeyCols {
		i, err := b.column(key, keysAt)
		if err != nil {
			return err
		}
		cfg.KeyCols = append(cfg.KeyCols, i)
		keyPos[strings.ToLower(b.src.Field(i).Name)] = j
	}
	nk := len(g.KeyCols)
	argPos := map[int]int{}
	outIdx := make([]int, len(p.Items))
	var aggItems []int
	for k, it := range p.Items {
		if it.Agg != nil {
			f, err := b.bindCall(it.Agg, &cfg.ArgCols, argPos)
			if err != nil {
				return err
			}
			cfg.Aggs = append(cfg.Aggs, f)
			cfg.ResultNames = append(cfg.ResultNames, fmt.Sprintf("__volga_r%d", k))
			aggItems = append(aggItems, k)
			continue
		}
		cn, ok := it.Expr.AST.(*sqlparser.ColName)
		name := ""
		if ok {
			name = strings.ToLower(cn.Name.String())
		}
		switch j, isKey := keyPos[name]; {
		case isKey:
			outIdx[k] = window.GroupSeqCol + 1 + j
		case name == "window_start":
			outIdx[k] = window.GroupSeqCol + 1 + nk
		case name == "window_end":
			outIdx[k] = window.GroupSeqCol + 2 + nk
		default:
			return p.ErrorAfter(it.Expr.Pos, it.Expr.Text, "%s must be a GROUP BY key, window_start, window_end or an aggregate", it.Expr.Text)
		}
	}
	for a, k := range aggItems {
		outIdx[k] = window.GroupSeqCol + 3 + nk + a
	}
	b.c.prep = arrow.NewSchema(b.fields, nil)
	op, err := window.NewGroup(cfg, b.c.prep)
	if err != nil {
		return p.ErrorAfter(g.Pos, "GROUP BY", "%v", err)
	}
	out := op.OutSchema()
	b.c.stages = []*stage{{keys: g.KeyCols, group: &cfg, in: b.c.prep, out: out, tsCol: window.GroupTsCol, seqCol: window.GroupSeqCol}}
	b.c.outIdx = outIdx
	var outFields []arrow.Field
	for k, it := range p.Items {
		outFields = append(outFields, arrow.Field{Name: it.Name, Type: out.Field(outIdx[k]).Type, Nullable: true})
	}
	if err := checkDuplicateNames(p, outFields); err != nil {
		return err
	}
	b.c.Output = arrow.NewSchema(outFields, nil)
	return nil
}

func checkDuplicateNames(p *Plan, fields []arrow.Field) error {
	seen := map[string]bool{}
	for _, f := range fields {
		k := strings.ToLower(f.Name)
		if seen[k] {
			return p.ErrorAt(f.Name, "duplicate output column name %q: give one of them an alias", f.Name)
		}
		seen[k] = true
	}
	return nil
}

// constValue returns the value of a literal argument (as in top(x, 3)).
func constValue(e sqlparser.Expr) (any, bool) {
	neg := false
	if u, ok := e.(*sqlparser.UnaryExpr); ok && u.Operator == sqlparser.UMinusStr {
		neg, e = true, u.Expr
	}
	switch v := e.(type) {
	case *sqlparser.SQLVal:
		switch v.Type {
		case sqlparser.IntVal:
			var n int64
			if _, err := fmt.Sscan(string(v.Val), &n); err == nil {
				if neg {
					n = -n
				}
				return n, true
			}
		case sqlparser.FloatVal:
			var f float64
			if _, err := fmt.Sscan(string(v.Val), &f); err == nil {
				if neg {
					f = -f
				}
				return f, true
			}
		case sqlparser.StrVal:
			if !neg {
				return string(v.Val), true
			}
		}
	case sqlparser.BoolVal:
		if !neg {
			return bool(v), true
		}
	}
	return nil, false
}

func constType(v any) arrow.DataType {
	switch v.(type) {
	case int64:
		return arrow.PrimitiveTypes.Int64
	case float64:
		return arrow.PrimitiveTypes.Float64
	case string:
		return arrow.BinaryTypes.String
	case bool:
		return arrow.FixedWidthTypes.Boolean
	}
	return arrow.Null
}
