package source_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/volga-go/volga/internal/arrowutil"
	"github.com/volga-go/volga/internal/testutil"
	"github.com/volga-go/volga/source"
)

// clusterSchema has a row number, then key columns of several kinds.
var clusterSchema = arrow.NewSchema([]arrow.Field{
	{Name: "row", Type: arrow.PrimitiveTypes.Int64},
	{Name: "user", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
	{Name: "name", Type: arrow.BinaryTypes.String, Nullable: true},
	{Name: "shard", Type: arrow.PrimitiveTypes.Int32, Nullable: true},
	{Name: "ts", Type: arrow.FixedWidthTypes.Timestamp_ms},
	{Name: "flag", Type: arrow.FixedWidthTypes.Boolean, Nullable: true},
	{Name: "blob", Type: arrow.BinaryTypes.Binary, Nullable: true},
	{Name: "x", Type: arrow.PrimitiveTypes.Float64},
	// Columns of the other kinds the rows are copied by.
	{Name: "dec", Type: &arrow.Decimal128Type{Precision: 20, Scale: 2}, Nullable: true},
	{Name: "text", Type: arrow.BinaryTypes.LargeString, Nullable: true},
	{Name: "tags", Type: arrow.ListOf(arrow.PrimitiveTypes.Int64), Nullable: true},
	{Name: "small", Type: arrow.PrimitiveTypes.Uint8},
	// Strings of up to 15 bytes, and longer ones, and numbers of 2 and
	// 4 bytes.
	{Name: "label", Type: arrow.BinaryTypes.String, Nullable: true},
	{Name: "note", Type: arrow.BinaryTypes.String, Nullable: true},
	{Name: "i16", Type: arrow.PrimitiveTypes.Int16, Nullable: true},
	{Name: "f32", Type: arrow.PrimitiveTypes.Float32},
}, nil)

// clusterInput returns n rows of clusterSchema with keys drawn from a few
// values each (NULL among them), cut into batches of random sizes.
func clusterInput(seed uint64, n int) []arrow.RecordBatch {
	rng := testutil.Rand(seed)
	b := array.NewRecordBuilder(memory.DefaultAllocator, clusterSchema)
	defer b.Release()
	var out []arrow.RecordBatch
	for i := range n {
		b.Field(0).(*array.Int64Builder).Append(int64(i))
		if rng.IntN(20) == 0 {
			b.Field(1).AppendNull()
		} else {
			b.Field(1).(*array.Int64Builder).Append(int64(rng.IntN(30)) - 10)
		}
		if rng.IntN(20) == 0 {
			b.Field(2).AppendNull()
		} else {
			// "" and "a" are distinct keys; so are "ab" and "a"+"b" of
			// two columns.
			b.Field(2).(*array.StringBuilder).Append(strings.Repeat("a", rng.IntN(4)) + strings.Repeat("b", rng.IntN(2)))
		}
		if rng.IntN(20) == 0 {
			b.Field(3).AppendNull()
		} else {
			b.Field(3).(*array.Int32Builder).Append(int32(rng.IntN(3)))
		}
		b.Field(4).(*array.TimestampBuilder).Append(arrow.Timestamp(rng.IntN(5)))
		if rng.IntN(10) == 0 {
			b.Field(5).AppendNull()
		} else {
			b.Field(5).(*array.BooleanBuilder).Append(rng.IntN(2) == 0)
		}
		if rng.IntN(10) == 0 {
			b.Field(6).AppendNull()
		} else {
			b.Field(6).(*array.BinaryBuilder).Append([]byte{byte(rng.IntN(3)), 0}[:1+rng.IntN(2)])
		}
		b.Field(7).(*array.Float64Builder).Append(rng.Float64())
		if rng.IntN(10) == 0 {
			b.Field(8).AppendNull()
			b.Field(9).AppendNull()
			b.Field(10).AppendNull()
		} else {
			b.Field(8).(*array.Decimal128Builder).Append(decimal128.FromI64(int64(rng.IntN(1 << 40))))
			b.Field(9).(*array.LargeStringBuilder).Append(strings.Repeat("xy", rng.IntN(5)))
			lb := b.Field(10).(*array.ListBuilder)
			lb.Append(true)
			for range rng.IntN(3) {
				lb.ValueBuilder().(*array.Int64Builder).Append(int64(rng.IntN(100)))
			}
		}
		b.Field(11).(*array.Uint8Builder).Append(uint8(i))
		if rng.IntN(10) == 0 {
			b.Field(12).AppendNull()
			b.Field(13).AppendNull()
			b.Field(14).AppendNull()
		} else {
			b.Field(12).(*array.StringBuilder).Append(strings.Repeat("é", rng.IntN(8)) + strings.Repeat("z", rng.IntN(2)))
			b.Field(13).(*array.StringBuilder).Append(fmt.Sprintf("%0*d", rng.IntN(30), i))
			b.Field(14).(*array.Int16Builder).Append(int16(rng.IntN(1<<16) - 1<<15))
		}
		b.Field(15).(*array.Float32Builder).Append(rng.Float32() - 0.5)
		if rng.IntN(40) == 0 || i == n-1 {
			out = append(out, b.NewRecordBatch())
		}
	}
	return out
}

// TestClustered checks the order of Clustered against a brute-force
// grouping of the input's rows by the values of the key columns (NULL a
// value of its own): every row once, the keys in the order of their first
// rows, each key's rows in input order, for keys of one int64, string or
// timestamp column and for composite keys, over batches of random sizes,
// in batches of at most the batch size.
func TestClustered(t *testing.T) {
	for seed := range uint64(max(testutil.Scale(6), 2)) {
		in := clusterInput(seed+1, 300+int(seed)*400)
		all, _ := readAll(t, source.NewMemory(clusterSchema, in...))
		for _, cols := range [][]string{{"user"}, {"name"}, {"ts"}, {"user", "name"}, {"name", "shard"}, {"flag", "blob"}, {"SHARD", "user", "ts"}} {
			// Brute force: keys by first row, rows by key in input order.
			idx := make([]int, len(cols))
			for j, c := range cols {
				idx[j] = slices.IndexFunc(clusterSchema.Fields(), func(f arrow.Field) bool { return strings.EqualFold(f.Name, c) })
			}
			var keys []string
			rowsOf := map[string][]any{}
			for _, r := range all {
				k := ""
				for _, j := range idx {
					k += fmt.Sprintf("%#v|", r[j])
				}
				if _, ok := rowsOf[k]; !ok {
					keys = append(keys, k)
				}
				rowsOf[k] = append(rowsOf[k], r[0])
			}
			var want []any
			for _, k := range keys {
				want = append(want, rowsOf[k]...)
			}
			batch := 1 + int(seed)*37
			src, err := source.NewClustered(source.NewMemory(clusterSchema, in...), cols, source.WithBatchSize(batch))
			if err != nil {
				t.Fatal(err)
			}
			got, sizes := readAll(t, src)
			var gotRows []any
			for _, r := range got {
				gotRows = append(gotRows, r[0])
			}
			if !slices.Equal(gotRows, want) {
				t.Fatalf("seed %d, by %v: rows in order %v, want %v", seed, cols, gotRows, want)
			}
			for i, r := range got {
				if fmt.Sprint(r) != fmt.Sprint(all[r[0].(int64)]) {
					t.Fatalf("seed %d, by %v: row %d is %v, input row %v", seed, cols, i, r, all[r[0].(int64)])
				}
			}
			for i, n := range sizes {
				if n > int64(batch) || n < int64(batch) && i < len(sizes)-1 {
					t.Fatalf("seed %d, by %v: batch %d of %d rows, batch size %d", seed, cols, i, n, batch)
				}
			}
			if _, err := src.Read(context.Background()); !errors.Is(err, io.EOF) {
				t.Fatalf("Read after the end: %v, want io.EOF", err)
			}
			if err := src.Close(); err != nil {
				t.Fatal(err)
			}
			if _, err := src.Read(context.Background()); !errors.Is(err, source.ErrClosed) {
				t.Fatalf("Read after Close: %v, want ErrClosed", err)
			}
		}
		arrowutil.ReleaseAll(in)
	}
}

// TestClusteredErrors checks what Clustered refuses: no input, no
// columns, a column not in the input, a float or list column, Project
// over an input that cannot leave columns out, or leaving out a key, and
// an input error, which Read returns.
func TestClusteredErrors(t *testing.T) {
	in := clusterInput(1, 50)
	defer arrowutil.ReleaseAll(in)
	mem := func() source.Source { return source.NewMemory(clusterSchema, in...) }
	for name, c := range map[string]struct {
		src  source.Source
		cols []string
		want string
	}{
		"nil input":  {nil, []string{"user"}, "nil input"},
		"no columns": {mem(), nil, "no columns"},
		"missing":    {mem(), []string{"user", "nope"}, `no column "nope"`},
		"float":      {mem(), []string{"x"}, `column "x" is of type float64`},
	} {
		if _, err := source.NewClustered(c.src, c.cols); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: err %v, want one saying %q", name, err, c.want)
		}
	}
	lists := arrow.NewSchema([]arrow.Field{{Name: "l", Type: arrow.ListOf(arrow.PrimitiveTypes.Int64)}}, nil)
	if _, err := source.NewClustered(source.NewMemory(lists), []string{"l"}); err == nil || !strings.Contains(err.Error(), "cannot be told apart") {
		t.Errorf("list key: err %v", err)
	}
	c, err := source.NewClustered(mem(), []string{"user"})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Project([]string{"user", "x"}); err == nil || !strings.Contains(err.Error(), "cannot leave columns out") {
		t.Errorf("Project over memory: err %v", err)
	}
	// An input that fails: the error comes out of the first Read.
	failing := &failSource{Source: mem(), after: 2}
	c, err = source.NewClustered(failing, []string{"user"})
	if err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if _, err := c.Read(context.Background()); !errors.Is(err, errFail) {
			t.Errorf("failing input: Read err %v, want %v (every time)", err, errFail)
		}
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
}

var errFail = errors.New("the disk is gone")

// failSource is a source whose Read fails after some batches.
type failSource struct {
	source.Source
	after int
}

func (f *failSource) Read(ctx context.Context) (arrow.RecordBatch, error) {
	if f.after == 0 {
		return nil, errFail
	}
	f.after--
	return f.Source.Read(ctx)
}

// TestClusteredProject: over a Parquet file, Project narrows what is read
// (the keys must stay), and the rows come out clustered with only those
// columns.
func TestClusteredProject(t *testing.T) {
	path := filepath.Join(t.TempDir(), "in.parquet")
	writeParquet(t, path, 0, 40)
	pq, err := source.NewParquet(path)
	if err != nil {
		t.Fatal(err)
	}
	c, err := source.NewClustered(pq, []string{"user"}, source.WithBatchSize(7))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := c.Project([]string{"ts"}); err == nil || !strings.Contains(err.Error(), `leaves out "user"`) {
		t.Fatalf("Project without the key: err %v", err)
	}
	if err := c.Project([]string{"user", "ts"}); err != nil {
		t.Fatal(err)
	}
	if c.Schema().NumFields() != 2 {
		t.Fatalf("schema after Project: %s", c.Schema())
	}
	rows, _ := readAll(t, c)
	if len(rows) != 40 {
		t.Fatalf("%d rows, want 40", len(rows))
	}
	// writeParquet's users: NULL for rows 0, 3, 6...; otherwise "u" x
	// (i%4+1): first rows 0 (NULL), 1 (uu), 2 (uuu), 4 (u), 7 (uuuu).
	u := c.Schema().FieldIndices("user")[0] // Parquet keeps the file's order
	var order []any
	for i, r := range rows {
		if i == 0 || fmt.Sprint(r[u]) != fmt.Sprint(rows[i-1][u]) {
			order = append(order, r[u])
		}
	}
	if want := []any{nil, "uu", "uuu", "u", "uuuu"}; fmt.Sprint(order) != fmt.Sprint(want) {
		t.Fatalf("keys in order %v, want %v", order, want)
	}
	if err := c.Project([]string{"user"}); err == nil {
		t.Fatal("Project after Read: no error")
	}
}

// TestClusteredSpill: past its memory bound, Clustered writes the input to
// parts by key (a chunk of rows at a time) and clusters a part at a time. Every row comes once, equal
// to its input row; each key's rows come together, in input order (the
// keys part by part now); the files are gone at the end, and on a Close
// half-way.
func TestClusteredSpill(t *testing.T) {
	// Rows go to the parts every 150 rows, not every million.
	defer source.SetSpillChunkRows(150)()
	for seed := range uint64(max(testutil.Scale(4), 2)) {
		in := clusterInput(seed+11, 500+int(seed)*700)
		all, _ := readAll(t, source.NewMemory(clusterSchema, in...))
		for _, bound := range []int64{1, 3000, 1 << 40} {
			for _, cols := range [][]string{{"user"}, {"name", "shard"}, {"flag", "blob"}} {
				dir := t.TempDir()
				src, err := source.NewClustered(source.NewMemory(clusterSchema, in...), cols,
					source.WithSpill(dir, bound), source.WithBatchSize(50))
				if err != nil {
					t.Fatal(err)
				}
				got, _ := readAll(t, src)
				what := fmt.Sprintf("seed %d, bound %d, by %v", seed, bound, cols)
				checkClustered(t, what, all, got, cols)
				if left, _ := os.ReadDir(dir); len(left) != 0 {
					t.Fatalf("%s: %d files left in the spill directory", what, len(left))
				}
				if err := src.Close(); err != nil {
					t.Fatal(err)
				}
				// Closed half-way, it removes its files too.
				src, err = source.NewClustered(source.NewMemory(clusterSchema, in...), cols, source.WithSpill(dir, bound))
				if err != nil {
					t.Fatal(err)
				}
				if rec, err := src.Read(context.Background()); err != nil {
					t.Fatal(err)
				} else {
					rec.Release()
				}
				if left, _ := os.ReadDir(dir); (len(left) == 1) != (bound < 1<<40) {
					t.Fatalf("%s: %d entries in the spill directory while reading, want a spill only below the input's size", what, len(left))
				}
				if err := src.Close(); err != nil {
					t.Fatal(err)
				}
				if left, _ := os.ReadDir(dir); len(left) != 0 {
					t.Fatalf("%s: %d files left after Close", what, len(left))
				}
			}
		}
		arrowutil.ReleaseAll(in)
	}
	// A directory that cannot be written to: the error names the spill.
	in := clusterInput(1, 200)
	defer arrowutil.ReleaseAll(in)
	src, err := source.NewClustered(source.NewMemory(clusterSchema, in...), []string{"user"},
		source.WithSpill(filepath.Join(t.TempDir(), "missing", "dir"), 1))
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	if _, err := src.Read(context.Background()); err == nil || !strings.Contains(err.Error(), "spill") {
		t.Fatalf("unwritable spill directory: err %v", err)
	}
}

// checkClustered checks that got holds every row of all once, equal to
// it, with each key's rows (key columns cols) together and in input order.
func checkClustered(t *testing.T, what string, all, got [][]any, cols []string) {
	t.Helper()
	checkClusteredOf(t, clusterSchema, what, all, got, cols)
}

// checkClusteredOf is checkClustered for rows of schema.
func checkClusteredOf(t *testing.T, schema *arrow.Schema, what string, all, got [][]any, cols []string) {
	t.Helper()
	if len(got) != len(all) {
		t.Fatalf("%s: %d rows, want %d", what, len(got), len(all))
	}
	idx := make([]int, len(cols))
	for j, c := range cols {
		idx[j] = slices.IndexFunc(schema.Fields(), func(f arrow.Field) bool { return strings.EqualFold(f.Name, c) })
	}
	keyOf := func(r []any) string {
		k := ""
		for _, j := range idx {
			k += fmt.Sprintf("%#v|", r[j])
		}
		return k
	}
	seen := make([]bool, len(all))
	done := map[string]bool{} // keys whose rows are behind
	last := map[string]int64{}
	prev := ""
	for i, r := range got {
		id := r[0].(int64)
		if seen[id] {
			t.Fatalf("%s: row %d twice", what, id)
		}
		seen[id] = true
		if fmt.Sprint(r) != fmt.Sprint(all[id]) {
			t.Fatalf("%s: row %d is %v, input row %v", what, i, r, all[id])
		}
		k := keyOf(r)
		if k != prev {
			if done[k] {
				t.Fatalf("%s: key %s comes back at row %d", what, k, i)
			}
			done[prev] = true
			prev = k
		}
		if l, ok := last[k]; ok && id < l {
			t.Fatalf("%s: key %s's row %d after its row %d", what, k, id, l)
		}
		last[k] = id
	}
}

// FuzzClusteredKeys: keys of two byte-string columns (a string and a
// binary, NULL among them) are told apart exactly, however their bytes
// split between the columns: the rows come clustered by the pair, each
// pair's rows in input order, against a brute-force grouping.
func FuzzClusteredKeys(f *testing.F) {
	f.Add([]byte("a|bc|ab|c|a|bc|"), uint8(3))
	f.Add([]byte("||\x00|\x00\x00|||"), uint8(1))
	f.Add([]byte("x|y|x|y|x||x|y|"), uint8(2))
	f.Fuzz(func(t *testing.T, data []byte, batch uint8) {
		schema := arrow.NewSchema([]arrow.Field{
			{Name: "row", Type: arrow.PrimitiveTypes.Int64},
			{Name: "a", Type: arrow.BinaryTypes.String, Nullable: true},
			{Name: "b", Type: arrow.BinaryTypes.Binary, Nullable: true},
		}, nil)
		fields := strings.Split(string(data), "|")
		bld := array.NewRecordBuilder(memory.DefaultAllocator, schema)
		defer bld.Release()
		var in []arrow.RecordBatch
		defer func() { arrowutil.ReleaseAll(in) }()
		n := 0
		for i := 0; i+1 < len(fields) && n < 500; i += 2 {
			bld.Field(0).(*array.Int64Builder).Append(int64(n))
			// A field "\x00" is NULL, so that NULL and "" both occur.
			if fields[i] == "\x00" {
				bld.Field(1).AppendNull()
			} else {
				bld.Field(1).(*array.StringBuilder).Append(fields[i])
			}
			if fields[i+1] == "\x00" {
				bld.Field(2).AppendNull()
			} else {
				bld.Field(2).(*array.BinaryBuilder).Append([]byte(fields[i+1]))
			}
			n++
			if n%(int(batch%7)+1) == 0 {
				in = append(in, bld.NewRecordBatch())
			}
		}
		in = append(in, bld.NewRecordBatch())
		all, _ := readAll(t, source.NewMemory(schema, in...))
		src, err := source.NewClustered(source.NewMemory(schema, in...), []string{"a", "b"}, source.WithBatchSize(int(batch)%5+1))
		if err != nil {
			t.Fatal(err)
		}
		defer src.Close()
		got, _ := readAll(t, src)
		var keys []string
		rowsOf := map[string][]int64{}
		for _, r := range all {
			k := fmt.Sprintf("%#v|%#v", r[1], r[2])
			if _, ok := rowsOf[k]; !ok {
				keys = append(keys, k)
			}
			rowsOf[k] = append(rowsOf[k], r[0].(int64))
		}
		var want []int64
		for _, k := range keys {
			want = append(want, rowsOf[k]...)
		}
		var gotRows []int64
		for _, r := range got {
			gotRows = append(gotRows, r[0].(int64))
		}
		if !slices.Equal(gotRows, want) {
			t.Fatalf("rows in order %v, want %v", gotRows, want)
		}
	})
}

// TestClusteredReleases: every buffer Clustered takes from its allocator
// (gathered columns, key columns rebuilt from their runs, NULL keys
// included) goes back once the batches are released and the source
// closed, in memory and spilled, and the rows are the input's.
func TestClusteredReleases(t *testing.T) {
	in := clusterInput(5, 900)
	defer arrowutil.ReleaseAll(in)
	all, _ := readAll(t, source.NewMemory(clusterSchema, in...))
	for _, spill := range []bool{false, true} {
		for _, cols := range [][]string{{"user"}, {"ts"}, {"name"}, {"user", "name"}} {
			mem := memory.NewCheckedAllocator(memory.DefaultAllocator)
			opts := []source.Option{source.WithAllocator(mem), source.WithBatchSize(64)}
			if spill {
				opts = append(opts, source.WithSpill(t.TempDir(), 1))
			}
			src, err := source.NewClustered(source.NewMemory(clusterSchema, in...), cols, opts...)
			if err != nil {
				t.Fatal(err)
			}
			got, _ := readAll(t, src)
			checkClustered(t, fmt.Sprintf("spill %v, by %v", spill, cols), all, got, cols)
			if err := src.Close(); err != nil {
				t.Fatal(err)
			}
			mem.AssertSize(t, 0)
		}
	}
}

// TestClusteredRowStage: columns all of kinds Clustered holds row-major
// (numbers of 1 to 8 bytes, strings of up to 15 bytes, NULLs among them),
// in batches that are slices of larger ones (values at an offset), and
// enough rows that two goroutines place them: every row once, equal to
// its input row, clustered, and every buffer back to the allocator.
func TestClusteredRowStage(t *testing.T) {
	// Copies of columns with NULLs make more than 8 such columns (two
	// bytes of null bits a row).
	names := []string{"row", "user", "name", "shard", "ts", "blob", "x", "small", "label", "i16", "f32",
		"shard", "i16", "label", "name", "blob", "user"}
	idx := make([]int, len(names))
	fields := make([]arrow.Field, len(names))
	for j, n := range names {
		idx[j] = clusterSchema.FieldIndices(n)[0]
		fields[j] = clusterSchema.Field(idx[j])
		if j >= 11 {
			fields[j].Name = fmt.Sprintf("%s%d", n, j)
		}
	}
	schema := arrow.NewSchema(fields, nil)
	n := 70000
	if testing.Short() {
		n = 3000
	}
	in := clusterInput(9, n)
	defer arrowutil.ReleaseAll(in)
	rng := testutil.Rand(9)
	var parts []arrow.RecordBatch
	for _, rec := range in {
		cols := make([]arrow.Array, len(idx))
		for j, i := range idx {
			cols[j] = rec.Column(i)
		}
		whole := array.NewRecordBatch(schema, cols, rec.NumRows())
		for lo := int64(0); lo < whole.NumRows(); {
			hi := min(whole.NumRows(), lo+1+int64(rng.IntN(30)))
			parts = append(parts, whole.NewSlice(lo, hi))
			lo = hi
		}
		whole.Release()
	}
	defer arrowutil.ReleaseAll(parts)
	all, _ := readAll(t, source.NewMemory(schema, parts...))
	for _, cols := range [][]string{{"user"}, {"name"}, {"label", "shard"}} {
		mem := memory.NewCheckedAllocator(memory.DefaultAllocator)
		src, err := source.NewClustered(source.NewMemory(schema, parts...), cols, source.WithAllocator(mem), source.WithBatchSize(1000))
		if err != nil {
			t.Fatal(err)
		}
		got, _ := readAll(t, src)
		checkClusteredOf(t, schema, fmt.Sprintf("by %v", cols), all, got, cols)
		if err := src.Close(); err != nil {
			t.Fatal(err)
		}
		mem.AssertSize(t, 0)
	}
}
