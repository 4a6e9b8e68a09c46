// Package rows holds query results as plain Go rows and compares them.
//
// Both engines' outputs are reduced to the same canonical value types so a
// comparison never trips over representation: nil (SQL NULL), int64,
// float64, string, bool and time.Time (UTC). Integers of every width become
// int64, DuckDB's HUGEINT (the type of sum(BIGINT)) becomes int64 when it
// fits, and Arrow timestamps of any unit become time.Time.
package rows

import (
	"cmp"
	"fmt"
	"math"
	"math/big"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
)

// Table is a query result: column names and rows of canonical values.
type Table struct {
	Names []string
	Rows  [][]any
}

// Canonical converts a value produced by database/sql or by ArrowValue to
// its canonical type. Values of unknown types are returned unchanged (and
// then compare unequal to everything but themselves).
func Canonical(v any) any {
	switch x := v.(type) {
	case nil:
		return nil
	case int:
		return int64(x)
	case int8:
		return int64(x)
	case int16:
		return int64(x)
	case int32:
		return int64(x)
	case int64:
		return x
	case uint8:
		return int64(x)
	case uint16:
		return int64(x)
	case uint32:
		return int64(x)
	case uint64:
		if x <= math.MaxInt64 {
			return int64(x)
		}
		return new(big.Int).SetUint64(x).String()
	case *big.Int:
		if x.IsInt64() {
			return x.Int64()
		}
		return x.String()
	case float32:
		return float64(x)
	case float64:
		return x
	case []byte:
		return string(x)
	case time.Time:
		return x.UTC()
	}
	return v
}

// ArrowValue returns cell i of col as a canonical value.
func ArrowValue(col arrow.Array, i int) any {
	if col.IsNull(i) {
		return nil
	}
	switch a := col.(type) {
	case *array.Int64:
		return a.Value(i)
	case *array.Int32:
		return int64(a.Value(i))
	case *array.Int16:
		return int64(a.Value(i))
	case *array.Int8:
		return int64(a.Value(i))
	case *array.Uint64:
		return Canonical(a.Value(i))
	case *array.Uint32:
		return int64(a.Value(i))
	case *array.Float64:
		return a.Value(i)
	case *array.Float32:
		return float64(a.Value(i))
	case *array.String:
		return strings.Clone(a.Value(i)) // the record's buffers may be reused once released
	case *array.LargeString:
		return strings.Clone(a.Value(i))
	case *array.Boolean:
		return a.Value(i)
	case *array.Timestamp:
		unit := a.DataType().(*arrow.TimestampType).Unit
		return a.Value(i).ToTime(unit).UTC()
	case *array.Dictionary:
		return ArrowValue(a.Dictionary(), a.GetValueIndex(i))
	}
	return col.ValueStr(i)
}

// FromRecords flattens record batches into a Table.
func FromRecords(schema *arrow.Schema, recs []arrow.RecordBatch) Table {
	t := Table{}
	if schema == nil && len(recs) > 0 {
		schema = recs[0].Schema()
	}
	if schema != nil {
		for _, f := range schema.Fields() {
			t.Names = append(t.Names, f.Name)
		}
	}
	for _, rec := range recs {
		for r := 0; r < int(rec.NumRows()); r++ {
			row := make([]any, rec.NumCols())
			for c := range row {
				row[c] = ArrowValue(rec.Column(c), r)
			}
			t.Rows = append(t.Rows, row)
		}
	}
	return t
}

// Col returns the index of the named column, or -1.
func (t Table) Col(name string) int {
	return slices.Index(t.Names, name)
}

// SortedBy returns a copy of t whose rows are sorted by the int64 column
// name (NULLs first). It panics when the column does not exist.
func (t Table) SortedBy(name string) Table {
	c := t.Col(name)
	if c < 0 {
		panic(fmt.Sprintf("rows: no column %q in %v", name, t.Names))
	}
	out := Table{Names: t.Names, Rows: slices.Clone(t.Rows)}
	slices.SortStableFunc(out.Rows, func(a, b []any) int {
		x, xok := a[c].(int64)
		y, yok := b[c].(int64)
		switch {
		case !xok && !yok:
			return 0
		case !xok:
			return -1
		case !yok:
			return 1
		}
		return cmpInt(x, y)
	})
	return out
}

// SortedByCols returns a copy of t whose rows are sorted by the named
// columns, in order, comparing canonical values with Compare. It panics
// when a column does not exist.
func (t Table) SortedByCols(names ...string) Table {
	cols := make([]int, len(names))
	for i, n := range names {
		if cols[i] = t.Col(n); cols[i] < 0 {
			panic(fmt.Sprintf("rows: no column %q in %v", n, t.Names))
		}
	}
	out := Table{Names: t.Names, Rows: slices.Clone(t.Rows)}
	slices.SortStableFunc(out.Rows, func(a, b []any) int {
		for _, c := range cols {
			if r := Compare(a[c], b[c]); r != 0 {
				return r
			}
		}
		return 0
	})
	return out
}

// Compare orders canonical values: NULL first, then by value for two
// values of the same type (int64, float64, string, bool, time.Time); values
// of different types order by type name, so any mix sorts consistently.
func Compare(a, b any) int {
	switch {
	case a == nil && b == nil:
		return 0
	case a == nil:
		return -1
	case b == nil:
		return 1
	}
	switch x := a.(type) {
	case int64:
		if y, ok := b.(int64); ok {
			return cmpInt(x, y)
		}
	case float64:
		if y, ok := b.(float64); ok {
			return cmp.Compare(x, y)
		}
	case string:
		if y, ok := b.(string); ok {
			return strings.Compare(x, y)
		}
	case bool:
		if y, ok := b.(bool); ok {
			switch {
			case x == y:
				return 0
			case !x:
				return -1
			}
			return 1
		}
	case time.Time:
		if y, ok := b.(time.Time); ok {
			return x.Compare(y)
		}
	}
	return strings.Compare(fmt.Sprintf("%T", a), fmt.Sprintf("%T", b))
}

func cmpInt(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// Tolerance says when two float64 values are equal: |a-b| <= Abs or
// |a-b| <= Rel*max(|a|,|b|). NaNs equal NaNs; infinities equal themselves.
type Tolerance struct {
	Rel float64
	Abs float64
}

// DefaultTolerance is the float tolerance of the oracle: 1e-9 relative, as
// SPEC.md section 4 requires, plus an absolute floor of 1e-9 so that values
// which are mathematically zero (the variance of equal values, a sum that
// cancels) compare equal whatever the rounding residue each engine's
// summation order leaves (DuckDB's segment trees and our running sums with
// retraction leave different residues of order 1e-13 on this data).
var DefaultTolerance = Tolerance{Rel: 1e-9, Abs: 1e-9}

// Equal reports whether two canonical values are equal: exactly for
// everything but float64 pairs, which use tol. NULL equals only NULL.
func (tol Tolerance) Equal(a, b any) bool {
	fa, aok := a.(float64)
	fb, bok := b.(float64)
	if aok && bok {
		switch {
		case math.IsNaN(fa) || math.IsNaN(fb):
			return math.IsNaN(fa) && math.IsNaN(fb)
		case math.IsInf(fa, 0) || math.IsInf(fb, 0):
			return fa == fb
		}
		d := math.Abs(fa - fb)
		return d <= tol.Abs || d <= tol.Rel*math.Max(math.Abs(fa), math.Abs(fb))
	}
	ta, aok := a.(time.Time)
	tb, bok := b.(time.Time)
	if aok && bok {
		return ta.Equal(tb)
	}
	return a == b
}

// Diff compares got with want row by row and column by column. It returns
// "" when they are equal, otherwise a readable report: differing column
// names or row counts, and up to maxRows differing rows, each shown with
// the context columns (for instance id, user_id, ts) and every differing
// column as want/got.
func Diff(want, got Table, tol Tolerance, context []string, maxRows int) string {
	var b strings.Builder
	if !slices.Equal(want.Names, got.Names) {
		fmt.Fprintf(&b, "column names differ:\n  want %v\n  got  %v\n", want.Names, got.Names)
		return b.String()
	}
	if len(want.Rows) != len(got.Rows) {
		fmt.Fprintf(&b, "row count differs: want %d, got %d\n", len(want.Rows), len(got.Rows))
	}
	var ctx []int
	for _, n := range context {
		if c := want.Col(n); c >= 0 {
			ctx = append(ctx, c)
		}
	}
	n := min(len(want.Rows), len(got.Rows))
	bad, badCells := 0, 0
	perCol := make([]int, len(want.Names))
	for r := 0; r < n; r++ {
		var cells []string
		for c := range want.Names {
			w, g := want.Rows[r][c], got.Rows[r][c]
			if tol.Equal(w, g) {
				continue
			}
			perCol[c]++
			badCells++
			cells = append(cells, fmt.Sprintf("%s: want %s, got %s", want.Names[c], Format(w), Format(g)))
		}
		if len(cells) == 0 {
			continue
		}
		bad++
		if bad > maxRows {
			continue
		}
		var where []string
		for _, c := range ctx {
			where = append(where, fmt.Sprintf("%s=%s", want.Names[c], Format(want.Rows[r][c])))
		}
		fmt.Fprintf(&b, "row %d [%s]:\n", r, strings.Join(where, " "))
		for _, s := range cells {
			fmt.Fprintf(&b, "    %s\n", s)
		}
	}
	if bad == 0 && b.Len() == 0 {
		return ""
	}
	if bad > 0 {
		var cols []string
		for c, k := range perCol {
			if k > 0 {
				cols = append(cols, fmt.Sprintf("%s=%d", want.Names[c], k))
			}
		}
		fmt.Fprintf(&b, "%d of %d rows differ (%d cells; by column: %s)", bad, n, badCells, strings.Join(cols, " "))
		if bad > maxRows {
			fmt.Fprintf(&b, "; first %d shown", maxRows)
		}
		b.WriteString("\n")
	}
	return b.String()
}

// Format renders a canonical value for a diff: NULL, quoted strings,
// shortest floats with their type, RFC 3339 timestamps in milliseconds.
func Format(v any) string {
	switch x := v.(type) {
	case nil:
		return "NULL"
	case string:
		return strconv.Quote(x)
	case float64:
		return strconv.FormatFloat(x, 'g', -1, 64) + "(f64)"
	case int64:
		return strconv.FormatInt(x, 10)
	case time.Time:
		return x.Format("2006-01-02T15:04:05.000Z")
	}
	return fmt.Sprintf("%v(%T)", v, v)
}
