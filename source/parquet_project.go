package source

import (
	"errors"
	"fmt"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
)

// WithColumns makes a Parquet source decode only the named columns (a
// projection): Schema and every batch Read returns hold only them, in the
// order of the file's columns, whatever the order of names (so a set of
// names always gives the same schema); a name given twice counts once.
// NewParquetFiles returns an error naming a column the first file does
// not have. Positions (Position, Seek) count rows as without it. Every
// file must still have the same columns as the first, all of them, not
// only those decoded. Without WithColumns, or with no names, every column
// is decoded. The other sources ignore it.
//
// (*Parquet).Project narrows a source that is already open.
func WithColumns(names ...string) Option {
	return func(o *options) {
		o.columns = append([]string(nil), names...)
	}
}

var _ Projector = (*Parquet)(nil)

// Project implements Projector: from now on only the named columns of
// Schema are decoded, and Schema and the batches Read returns hold only
// them, in the order they have in Schema. A name given twice counts once;
// a name not in Schema is an error naming it, and so is an empty list.
// Project may be called more than once (each call narrows further) and
// after Seek, but not after the first Read: it returns an error then and
// leaves the source as it was.
func (p *Parquet) Project(columns []string) error {
	if p.closed {
		return ErrClosed
	}
	if p.started {
		return errors.New("source: parquet: Project after the first Read")
	}
	if len(columns) == 0 {
		return errors.New("source: parquet: Project needs at least one column")
	}
	fields, err := projectFields(p.fileSchema, p.fields, columns)
	if err != nil {
		return fmt.Errorf("source: parquet %s: %w", p.paths[0], err)
	}
	p.fields = fields
	p.schema = projectSchema(p.fileSchema, fields)
	return nil
}

// projectFields returns the indices, in the file's schema file, of the
// named columns among those of have (indices into file; nil for all of
// them), in ascending order.
func projectFields(file *arrow.Schema, have []int, names []string) ([]int, error) {
	if have == nil {
		have = make([]int, file.NumFields())
		for i := range have {
			have[i] = i
		}
	}
	want := make(map[string]bool, len(names))
	for _, n := range names {
		want[n] = true
	}
	var out []int
	found := make(map[string]bool, len(names))
	for _, i := range have {
		name := file.Field(i).Name
		if !want[name] {
			continue
		}
		if found[name] {
			return nil, fmt.Errorf("column %q is ambiguous: the file has two or more columns of that name", name)
		}
		found[name] = true
		out = append(out, i)
	}
	for _, n := range names {
		if !found[n] {
			avail := make([]string, len(have))
			for k, i := range have {
				avail[k] = file.Field(i).Name
			}
			return nil, fmt.Errorf("no column %q (columns: %s)", n, strings.Join(avail, ", "))
		}
	}
	return out, nil
}

// projectSchema returns the schema of the fields of file at indices
// fields (nil: file itself), with file's metadata.
func projectSchema(file *arrow.Schema, fields []int) *arrow.Schema {
	if fields == nil {
		return file
	}
	fs := make([]arrow.Field, len(fields))
	for k, i := range fields {
		fs[k] = file.Field(i)
	}
	md := file.Metadata()
	return arrow.NewSchema(fs, &md)
}
