package volga

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/volga-go/volga/internal/values"
	"github.com/volga-go/volga/pipeline"
	"github.com/volga-go/volga/request"
	"github.com/volga-go/volga/sink"
	"github.com/volga-go/volga/source"
	"github.com/volga-go/volga/window"
)

// Service returns p as a request.Service, for request.NewHandler or any
// other front end. Its Lookup is Pipeline.Lookup, with key and candidate
// values converted to the types of their source columns first: a
// timestamp may be a time.Time, an RFC 3339 string or epoch
// milliseconds, an integral float64 is an integer. A value that does not
// fit its column, an unknown candidate column or one given twice (in two
// spellings: columns match case-insensitively), a candidate whose key
// columns differ from the key or whose event time is not at, or a time
// older than the state kept is a
// request.ErrInvalid error; a lookup before the pipeline
// started is request.ErrUnavailable; a pipeline that cannot serve lookups
// (an UNBOUNDED PRECEDING frame, no sliding window) answers
// request.ErrUnsupported. Map-valued features are
// []request.MapEntry.
func (p *Pipeline) Service() request.Service {
	return pipelineService{p: p, canErr: request.Unsupported(p.CanLookup()), keys: p.KeyColumns()}
}

// Handler serves p's lookups over HTTP: request.NewHandler(p.Service(),
// opts...). Run the pipeline (or start it) to have something to serve.
func (p *Pipeline) Handler(opts ...request.HandlerOption) http.Handler {
	return request.NewHandler(p.Service(), opts...)
}

// pipelineService adapts a Pipeline to request.Service.
type pipelineService struct {
	p *Pipeline
	// canErr is why the pipeline can never serve a lookup (an UNBOUNDED
	// frame, no sliding window), as a request.ErrUnsupported; nil if it can.
	canErr error
	// keys are the key columns, computed once: the handler asks for them
	// on every request.
	keys []string
}

// KeyColumns returns the key columns (shared: do not modify).
func (s pipelineService) KeyColumns() []string { return s.keys }

func (s pipelineService) Lookup(ctx context.Context, key map[string]any, at time.Time, row map[string]any) (request.Features, error) {
	if s.canErr != nil {
		return request.Features{}, s.canErr
	}
	schema := s.p.compiled.Source
	// A key whose values all have their column's Go type already (an
	// int64 for an integer column...) is what Coerce would make of it:
	// it is passed on as it is (Lookup does not modify it).
	typed := key
	if !keyTyped(schema, key) {
		typed = make(map[string]any, len(key))
		for col, v := range key {
			f, ok := fieldFold(schema, col)
			if !ok {
				// A key column computed by the query: the engine checks it.
				typed[col] = v
				continue
			}
			tv, err := coerce(v, f.Type)
			if err != nil {
				return request.Features{}, request.Invalid(fmt.Errorf("key column %q: %v", col, err))
			}
			typed[col] = tv
		}
	}
	var cand map[string]any
	if row != nil {
		cand = make(map[string]any, len(row))
		for col, v := range row {
			f, ok := fieldFold(schema, col)
			if !ok {
				return request.Features{}, request.Invalid(fmt.Errorf("candidate row has unknown column %q; the source columns are %s", col, columnNames(schema)))
			}
			if _, dup := cand[f.Name]; dup {
				// Two spellings of one column: which value would count
				// depended on the map's order.
				other := ""
				for c := range row {
					if g, _ := fieldFold(schema, c); c != col && g.Name == f.Name {
						other = c
						break
					}
				}
				a, b := min(col, other), max(col, other)
				return request.Features{}, request.Invalid(fmt.Errorf("candidate row gives column %q twice, as %q and %q", f.Name, a, b))
			}
			tv, err := coerce(v, f.Type)
			if err != nil {
				return request.Features{}, request.Invalid(fmt.Errorf("candidate row column %q: %v", col, err))
			}
			cand[f.Name] = tv
		}
	}
	res, err := s.p.Lookup(ctx, typed, at, cand)
	switch {
	case err == nil:
	case errors.Is(err, pipeline.ErrNotRunning):
		return request.Features{}, request.Unavailable(err)
	case errors.Is(err, window.ErrTooOld), errors.Is(err, pipeline.ErrCandidateKey), errors.Is(err, pipeline.ErrCandidate):
		return request.Features{}, request.Invalid(err)
	case errors.Is(err, window.ErrUnboundedLookup), errors.Is(err, pipeline.ErrNoLookup), errors.Is(err, window.ErrKeyDropped):
		return request.Features{}, request.Unsupported(err)
	default:
		return request.Features{}, err
	}
	// res.Values is this lookup's own slice: convert in place.
	for i, v := range res.Values {
		res.Values[i] = requestValue(v)
	}
	return request.Features{Names: res.Names, Values: res.Values, Watermark: res.Watermark}, nil
}

// keyTyped reports whether values.Coerce leaves every value of key as it
// is: nil, or an int64, uint64, float64, string or bool for a column of
// the matching type. (A key column computed by the query is passed on
// unconverted in any case.)
func keyTyped(schema *arrow.Schema, key map[string]any) bool {
	for col, v := range key {
		f, ok := fieldFold(schema, col)
		if !ok || v == nil {
			continue
		}
		switch f.Type.ID() {
		case arrow.INT8, arrow.INT16, arrow.INT32, arrow.INT64:
			n, isInt := v.(int64)
			ok = isInt && values.IntFits(n, f.Type.ID())
		case arrow.UINT8, arrow.UINT16, arrow.UINT32, arrow.UINT64:
			u, isUint := v.(uint64)
			ok = isUint && values.UintFits(u, f.Type.ID())
		case arrow.FLOAT16, arrow.FLOAT32, arrow.FLOAT64:
			ok = isType[float64](v)
		case arrow.STRING, arrow.LARGE_STRING:
			ok = isType[string](v)
		case arrow.BOOL:
			ok = isType[bool](v)
		default:
			ok = false
		}
		if !ok {
			return false
		}
	}
	return true
}

func isType[T any](v any) bool { _, ok := v.(T); return ok }

// coerce is values.Coerce, refusing an integer written with a fraction
// or an exponent beyond 2^53: parsed as a float64, it may already be
// another integer than the one written.
func coerce(v any, dt arrow.DataType) (any, error) {
	if f, ok := v.(float64); ok && arrow.IsInteger(dt.ID()) && math.Abs(f) > 1<<53 {
		return nil, fmt.Errorf("value %s is beyond 2^53 and was written with a fraction or an exponent, which float64 cannot hold exactly: write it as an integer", strconv.FormatFloat(f, 'g', -1, 64))
	}
	return values.Coerce(v, dt)
}

// requestValue converts the sink.Value form of a feature to the
// request.Features form: maps become []request.MapEntry, recursively.
func requestValue(v any) any {
	switch x := v.(type) {
	case []sink.MapEntry:
		out := make([]request.MapEntry, len(x))
		for i, e := range x {
			out[i] = request.MapEntry{Key: requestValue(e.Key), Value: requestValue(e.Value)}
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = requestValue(e)
		}
		return out
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[k] = requestValue(e)
		}
		return out
	}
	return v
}

// fieldFold finds a field by name: the first of that exact name, else the
// first whose name matches case-insensitively. (It allocates nothing:
// arrow's FieldIndices and Fields return copies, and the HTTP service
// calls it for every key column of every request.)
func fieldFold(s *arrow.Schema, name string) (arrow.Field, bool) {
	for i := range s.NumFields() {
		if f := s.Field(i); f.Name == name {
			return f, true
		}
	}
	for i := range s.NumFields() {
		if f := s.Field(i); strings.EqualFold(f.Name, name) {
			return f, true
		}
	}
	return arrow.Field{}, false
}

func columnNames(s *arrow.Schema) string {
	names := make([]string, s.NumFields())
	for i, f := range s.Fields() {
		names[i] = f.Name
	}
	return strings.Join(names, ", ")
}

// Recompute computes offline, with Backfill, the features of every
// lookup in lookups: a spine with one row per lookup (its key columns and
// its time, under the query's column names and types) goes through
// Backfill with opts (which bind the query's table with WithSource, and
// may set WithStrict). The result has one record per lookup, in order,
// with the lookup's key and time, the recomputed features and the
// watermark request.EndWatermark. Compare it with what was served with
// request.Check:
//
//	served, err := request.ReadLog(logFile)
//	recomputed, err := volga.Recompute(ctx, query, served, volga.WithSource("tx", events))
//	report := request.Check(served, recomputed, request.CheckOptions{})
//
// Lookups that carried a candidate row cannot be recomputed this way:
// leave them out of the log.
func Recompute(ctx context.Context, query string, lookups []request.Record, opts ...Option) ([]request.Record, error) {
	p, err := SQL(query, opts...)
	if err != nil {
		return nil, err
	}
	c := p.compiled
	if c.TimeColumn == "" {
		return nil, errors.New("volga: recompute needs a query with windowed aggregates")
	}
	keys := p.KeyColumns()
	var fields []arrow.Field
	for _, k := range append(append([]string{}, keys...), c.TimeColumn) {
		f, ok := fieldFold(c.Source, k)
		if !ok {
			return nil, fmt.Errorf("volga: recompute: key column %q is not a source column", k)
		}
		fields = append(fields, arrow.Field{Name: f.Name, Type: f.Type, Nullable: true})
	}
	schema := arrow.NewSchema(fields, nil)
	b := array.NewRecordBuilder(memory.DefaultAllocator, schema)
	defer b.Release()
	for i, l := range lookups {
		for j, k := range keys {
			v, ok := valueFold(l.Key, k)
			if !ok {
				return nil, fmt.Errorf("volga: recompute: lookup %d has no value for key column %q", i, k)
			}
			tv, err := values.Coerce(v, fields[j].Type)
			if err == nil {
				err = values.Append(b.Field(j), tv)
			}
			if err != nil {
				return nil, fmt.Errorf("volga: recompute: lookup %d: key column %q: %v", i, k, err)
			}
		}
		if err := values.Append(b.Field(len(keys)), l.At); err != nil {
			return nil, fmt.Errorf("volga: recompute: lookup %d: time: %v", i, err)
		}
	}
	rec := b.NewRecordBatch()
	defer rec.Release()
	spine := source.NewMemory(schema, rec)
	defer spine.Close()
	out := sink.NewCollector()
	defer out.Release()
	if err := Backfill(ctx, query, spine, out, opts...); err != nil {
		return nil, err
	}
	res := make([]request.Record, 0, len(lookups))
	for _, r := range out.Records() {
		names := make([]string, 0, int(r.NumCols())-len(fields))
		for _, f := range r.Schema().Fields()[len(fields):] {
			names = append(names, f.Name)
		}
		for i := 0; i < int(r.NumRows()); i++ {
			n := len(res)
			if n >= len(lookups) {
				return nil, fmt.Errorf("volga: recompute: backfill returned more rows than the %d lookups", len(lookups))
			}
			vals := make([]any, len(names))
			for j := range names {
				vals[j] = requestValue(sink.Value(r.Column(len(fields)+j), i))
			}
			res = append(res, request.Record{Key: lookups[n].Key, At: lookups[n].At,
				Features: request.Features{Names: names, Values: vals, Watermark: request.EndWatermark}})
		}
	}
	if len(res) != len(lookups) {
		return nil, fmt.Errorf("volga: recompute: backfill returned %d rows for %d lookups", len(res), len(lookups))
	}
	return res, nil
}

// valueFold finds a map value by key, case-insensitively.
func valueFold(m map[string]any, name string) (any, bool) {
	if v, ok := m[name]; ok {
		return v, true
	}
	for k, v := range m {
		if strings.EqualFold(k, name) {
			return v, true
		}
	}
	return nil, false
}
