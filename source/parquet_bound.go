package source

import (
	"fmt"
	"math"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/metadata"
	"github.com/apache/arrow-go/v18/parquet/schema"
)

// pqBounds holds, for one column, the lower bounds the row-group
// statistics of every file give (LowerBound). It is loaded on the first
// call, from the files' footers.
type pqBounds struct {
	col string
	ok  bool // every row group of every file has a usable minimum
	// groups[f][g] is row group g of file f: the file's row count at its
	// end and the least minimum of it and the row groups after it in the
	// file.
	groups [][]pqGroupBound
	// after[f] is the least minimum of the files from f on
	// (math.MaxInt64 past the last).
	after []int64
}

type pqGroupBound struct {
	end, min int64
}

// LowerBound implements LowerBounder from the row-group statistics of the
// files: the least minimum of col over the row groups with rows not yet
// returned (the row group being read counts whole). It reports false when
// a row group has no statistics for col or col is not an int64 or
// timestamp column.
func (p *Parquet) LowerBound(col string) (int64, bool) {
	if p.closed {
		return 0, false
	}
	if p.bounds == nil || p.bounds.col != col {
		p.bounds = p.loadBounds(col)
	}
	b := p.bounds
	if !b.ok {
		return 0, false
	}
	if p.idx >= len(p.paths) {
		return math.MaxInt64, true
	}
	for _, g := range b.groups[p.idx] {
		if g.end > p.row {
			return min(g.min, b.after[p.idx+1]), true
		}
	}
	return b.after[p.idx+1], true
}

// loadBounds reads the statistics of col from every file's footer. A
// footer that cannot be read (or that makes arrow-go panic) gives no
// bound; reading the file then reports what is wrong with it.
func (p *Parquet) loadBounds(col string) (b *pqBounds) {
	b = &pqBounds{col: col, groups: make([][]pqGroupBound, len(p.paths)), after: make([]int64, len(p.paths)+1)}
	defer func() {
		if r := recover(); r != nil {
			b.ok = false
		}
	}()
	fields, _ := p.schema.FieldsByName(col)
	if len(fields) != 1 {
		return b
	}
	for f, path := range p.paths {
		gs, err := readGroupMins(path, col, fields[0].Type)
		if err != nil || gs == nil {
			return b
		}
		// A group's min becomes the least of it and the file's later
		// groups; LowerBound adds the later files' bound.
		m := int64(math.MaxInt64)
		for g := len(gs) - 1; g >= 0; g-- {
			m = min(m, gs[g].min)
			gs[g].min = m
		}
		b.groups[f] = gs
	}
	b.after[len(p.paths)] = math.MaxInt64
	for f := len(p.paths) - 1; f >= 0; f-- {
		b.after[f] = b.after[f+1]
		if gs := b.groups[f]; len(gs) > 0 {
			b.after[f] = min(b.after[f], gs[0].min)
		}
	}
	b.ok = true
	return b
}

// readGroupMins returns, for each row group of the file at path, its row
// count at the group's end and the minimum of col converted to the units
// of LowerBound; nil when a row group has no usable minimum.
func readGroupMins(path, col string, dt arrow.DataType) ([]pqGroupBound, error) {
	r, err := file.OpenParquetFile(path, false)
	if err != nil {
		return nil, fmt.Errorf("source: parquet %s: %w", path, err)
	}
	defer r.Close()
	md := r.MetaData()
	ci := md.Schema.ColumnIndexByName(col)
	if ci < 0 {
		return nil, nil
	}
	conv := boundConv(md.Schema.Column(ci), dt)
	if conv == nil {
		return nil, nil
	}
	gs := make([]pqGroupBound, md.NumRowGroups())
	var end int64
	for g := range gs {
		rg := md.RowGroup(g)
		end += rg.NumRows()
		gs[g].end = end
		if rg.NumRows() == 0 {
			gs[g].min = math.MaxInt64
			continue
		}
		cc, err := rg.ColumnChunk(ci)
		if err != nil {
			return nil, nil
		}
		if set, err := cc.StatsSet(); err != nil || !set {
			return nil, nil
		}
		st, err := cc.Statistics()
		if err != nil {
			return nil, nil
		}
		i64, isI64 := st.(*metadata.Int64Statistics)
		if !isI64 || !i64.HasMinMax() {
			if st != nil && st.NullCount() == rg.NumRows() {
				gs[g].min = math.MaxInt64 // all null: no row with a time
				continue
			}
			return nil, nil
		}
		gs[g].min = conv(i64.Min())
	}
	return gs, nil
}

// boundConv returns the conversion of a stored value of Parquet column c
// read as Arrow type dt to the units of LowerBound, or nil when LowerBound
// does not apply.
func boundConv(c *schema.Column, dt arrow.DataType) func(int64) int64 {
	if c.PhysicalType() != parquet.Types.Int64 {
		return nil
	}
	switch t := dt.(type) {
	case *arrow.Int64Type:
		return func(v int64) int64 { return v }
	case *arrow.TimestampType:
		lt, ok := c.LogicalType().(schema.TimestampLogicalType)
		if !ok {
			return nil
		}
		var div int64
		switch lt.TimeUnit() {
		case schema.TimeUnitMillis:
			div = 1
		case schema.TimeUnitMicros:
			div = 1000
		case schema.TimeUnitNanos:
			div = 1000000
		default:
			return nil
		}
		// Read as seconds, a value loses its milliseconds: round the
		// bound down to whole seconds too.
		gran := int64(1)
		if t.Unit == arrow.Second {
			gran = 1000
		}
		return func(v int64) int64 { return floorDiv(floorDiv(v, div), gran) * gran }
	}
	return nil
}

func floorDiv(a, b int64) int64 {
	q := a / b
	if a%b != 0 && (a < 0) != (b < 0) {
		q--
	}
	return q
}
