// Package gen holds the deterministic workload generators of the benchmarks:
// the features-4 event log, written once to Parquet and cached on disk, and
// the bounded arrival-order shuffle used by the streaming workloads and the
// streaming oracle tests.
package gen

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
)

// version is part of every cached file name: bump it whenever the
// generator's output changes so stale caches are never reused.
const version = 1

// RowGroupRows is the Parquet row-group length of generated files: small
// enough that both engines can read row groups in parallel, large enough
// that per-group overhead does not matter.
const RowGroupRows = 256 * 1024

// Features4 describes the features-4 event log of BENCHMARKS.md: events
// (id, user_id, ts, amount, merchant), users uniform over Users, timestamps
// uniform over Days days from Start, ordered by ts (ties by id), id is the
// row number.
type Features4 struct {
	Events    int
	Users     int
	Merchants int
	Days      int
	Seed      uint64
	Start     time.Time
}

// NewFeatures4 returns the features-4 configuration of BENCHMARKS.md with
// the given size and seed: 100 000 users, 1 000 merchants, 30 days from
// 2024-01-01.
func NewFeatures4(events int, seed uint64) Features4 {
	return Features4{
		Events:    events,
		Users:     100_000,
		Merchants: 1_000,
		Days:      30,
		Seed:      seed,
		Start:     time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC),
	}
}

// Features4Schema is the schema of the features-4 event log.
var Features4Schema = arrow.NewSchema([]arrow.Field{
	{Name: "id", Type: arrow.PrimitiveTypes.Int64},
	{Name: "user_id", Type: arrow.PrimitiveTypes.Int64},
	{Name: "ts", Type: arrow.FixedWidthTypes.Timestamp_ms},
	{Name: "amount", Type: arrow.PrimitiveTypes.Float64},
	{Name: "merchant", Type: arrow.BinaryTypes.String},
}, nil)

// FileName is the cache file name of the configuration.
func (c Features4) FileName() string {
	return fmt.Sprintf("features-4-v%d-e%d-u%d-m%d-d%d-s%d.parquet",
		version, c.Events, c.Users, c.Merchants, c.Days, c.Seed)
}

// Generate produces the event log in record batches of at most batchRows
// rows and hands each to emit, which must release it.
func (c Features4) Generate(batchRows int, emit func(arrow.RecordBatch) error) error {
	rng := rand.New(rand.NewPCG(c.Seed, 0x766f6c6761)) // "volga"
	span := int64(c.Days) * 24 * int64(time.Hour/time.Millisecond)
	start := c.Start.UnixMilli()
	ts := make([]int64, c.Events)
	for i := range ts {
		ts[i] = start + rng.Int64N(span)
	}
	slices.Sort(ts)
	merchants := make([]string, c.Merchants)
	for i := range merchants {
		merchants[i] = fmt.Sprintf("m%04d", i)
	}
	mem := memory.DefaultAllocator
	b := array.NewRecordBuilder(mem, Features4Schema)
	defer b.Release()
	ids := b.Field(0).(*array.Int64Builder)
	users := b.Field(1).(*array.Int64Builder)
	tss := b.Field(2).(*array.TimestampBuilder)
	amounts := b.Field(3).(*array.Float64Builder)
	merch := b.Field(4).(*array.StringBuilder)
	for lo := 0; lo < len(ts); lo += batchRows {
		hi := min(lo+batchRows, len(ts))
		for i := lo; i < hi; i++ {
			ids.Append(int64(i))
			users.Append(rng.Int64N(int64(c.Users)))
			tss.Append(arrow.Timestamp(ts[i]))
			// Log-normal amounts in cents, median about 20.
			amounts.Append(math.Round(math.Exp(3+rng.NormFloat64())*100) / 100)
			merch.Append(merchants[rng.IntN(c.Merchants)])
		}
		rec := b.NewRecordBatch()
		if err := emit(rec); err != nil {
			return err
		}
	}
	return nil
}

// EnsureParquet returns the path of the configuration's Parquet file in
// dir, generating it first unless it is already there. created says whether
// it was generated. The file is written under a temporary name and renamed,
// so an interrupted run never leaves a truncated cache entry.
func EnsureParquet(dir string, c Features4) (path string, created bool, err error) {
	path = filepath.Join(dir, c.FileName())
	if _, err := os.Stat(path); err == nil {
		return path, false, nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", false, err
	}
	tmp, err := os.CreateTemp(dir, c.FileName()+".tmp*")
	if err != nil {
		return "", false, err
	}
	defer os.Remove(tmp.Name()) // a no-op after the rename
	w, err := NewParquetWriter(tmp, Features4Schema)
	if err != nil {
		tmp.Close()
		return "", false, err
	}
	err = c.Generate(64*1024, func(rec arrow.RecordBatch) error {
		defer rec.Release()
		return w.Write(rec)
	})
	if cerr := w.Close(); err == nil {
		err = cerr // closes tmp too
	}
	if err != nil {
		return "", false, fmt.Errorf("gen: write %s: %w", tmp.Name(), err)
	}
	if err := os.Chmod(tmp.Name(), 0o644); err != nil {
		return "", false, err
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return "", false, err
	}
	return path, true, nil
}

// NewParquetWriter returns a Parquet writer with the settings used for every
// generated file: Snappy compression, RowGroupRows-row groups, the Arrow
// schema stored so types round-trip exactly. Closing it closes w.
func NewParquetWriter(w interface {
	Write([]byte) (int, error)
	Close() error
}, schema *arrow.Schema) (*pqarrow.FileWriter, error) {
	props := parquet.NewWriterProperties(
		parquet.WithCompression(compress.Codecs.Snappy),
		parquet.WithMaxRowGroupLength(RowGroupRows),
	)
	return pqarrow.NewFileWriter(schema, w, props, pqarrow.NewArrowWriterProperties(pqarrow.WithStoreSchema()))
}

// ReadParquet reads the named columns (all when columns is empty) of a
// Parquet file into record batches of up to batchRows rows. The caller
// releases the batches.
func ReadParquet(path string, columns []string, batchRows int) (*arrow.Schema, []arrow.RecordBatch, error) {
	var recs []arrow.RecordBatch
	schema, err := ScanParquet(path, columns, batchRows, func(rec arrow.RecordBatch) error {
		rec.Retain()
		recs = append(recs, rec)
		return nil
	})
	if err != nil {
		for _, r := range recs {
			r.Release()
		}
		return nil, nil, err
	}
	return schema, recs, nil
}

// ScanParquet streams the named columns (all when columns is empty) of a
// Parquet file to fn in batches of up to batchRows rows. fn must Retain a
// batch it keeps. It returns the schema of the batches.
func ScanParquet(path string, columns []string, batchRows int, fn func(arrow.RecordBatch) error) (*arrow.Schema, error) {
	pf, err := file.OpenParquetFile(path, false)
	if err != nil {
		return nil, err
	}
	defer pf.Close()
	fr, err := pqarrow.NewFileReader(pf, pqarrow.ArrowReadProperties{BatchSize: int64(batchRows)}, memory.DefaultAllocator)
	if err != nil {
		return nil, err
	}
	full, err := fr.Schema()
	if err != nil {
		return nil, err
	}
	var idx []int
	for _, name := range columns {
		i := full.FieldIndices(name)
		if len(i) != 1 {
			return nil, fmt.Errorf("gen: %s has no column %q", path, name)
		}
		idx = append(idx, i[0])
	}
	rr, err := fr.GetRecordReader(context.Background(), idx, nil)
	if err != nil {
		return nil, err
	}
	defer rr.Release()
	for rr.Next() {
		if err := fn(rr.RecordBatch()); err != nil {
			return nil, err
		}
	}
	if err := rr.Err(); err != nil {
		return nil, err
	}
	return rr.Schema(), nil
}

// ArrivalOrder returns a deterministic arrival order for rows with event
// times ts (milliseconds), shuffled within an out-of-orderness bound: every
// row arrives after all rows with ts <= its own ts - bound, so with a
// bounded-out-of-orderness watermark of bound no row is ever late (a row r
// is late when ts_r <= max ts seen before it - bound).
//
// Each row gets a delay drawn uniformly from [0, bound) ms and rows arrive
// in order of ts + delay. Rows with equal ts then keep their original
// relative order: they are re-dealt onto the arrival slots their group
// occupies. That keeps the arrival order among peers, which ROWS frames and
// first_value/last_value depend on, equal to the batch (input) order, and
// it cannot make a row late since a slot's ts is unchanged.
//
// perm[i] is the index of the row that arrives i-th.
func ArrivalOrder(ts []int64, bound time.Duration, seed uint64) []int {
	n := len(ts)
	b := bound.Milliseconds()
	rng := rand.New(rand.NewPCG(seed, 0x73687566)) // "shuf"
	key := make([]int64, n)
	for i, t := range ts {
		key[i] = t
		if b > 0 {
			key[i] += rng.Int64N(b)
		}
	}
	perm := make([]int, n)
	for i := range perm {
		perm[i] = i
	}
	slices.SortFunc(perm, func(x, y int) int {
		return cmp.Or(cmp.Compare(key[x], key[y]), cmp.Compare(x, y))
	})
	// Peers in input order: rows sorted by (ts, input index).
	peers := make([]int, n)
	for i := range peers {
		peers[i] = i
	}
	slices.SortStableFunc(peers, func(x, y int) int { return cmp.Compare(ts[x], ts[y]) })
	// Slots sorted by (ts of the row in the slot, slot).
	slots := make([]int, n)
	for i := range slots {
		slots[i] = i
	}
	slices.SortStableFunc(slots, func(x, y int) int { return cmp.Compare(ts[perm[x]], ts[perm[y]]) })
	out := make([]int, n)
	for k := range n {
		out[slots[k]] = peers[k]
	}
	return out
}

// arrivalSchema is the schema of the stream-4 input: the columns of the
// features-4 log that its query reads.
var arrivalSchema = arrow.NewSchema(Features4Schema.Fields()[:4], nil)

// EnsureArrivalParquet returns the path of a Parquet file in dir holding
// the (id, user_id, ts, amount) columns of the configuration's event log in
// the arrival order of ArrivalOrder(ts, bound, c.Seed), generating it (and
// the event log) unless cached. Doing the shuffle here, in the process that
// prepares the input, keeps its buffers out of the measured engine's peak
// RSS.
func EnsureArrivalParquet(dir string, c Features4, bound time.Duration) (path string, created bool, err error) {
	return ensureReordered(dir, c, fmt.Sprintf("arrival-%dms", bound.Milliseconds()), func(_, tss []int64) []int {
		return ArrivalOrder(tss, bound, c.Seed)
	})
}

// EnsureByUserParquet is EnsureArrivalParquet with the events sorted by
// user, each user's in time order: a training-set export by entity.
func EnsureByUserParquet(dir string, c Features4) (path string, created bool, err error) {
	return ensureReordered(dir, c, "by-user", func(users, _ []int64) []int {
		perm := make([]int, len(users))
		for i := range perm {
			perm[i] = i
		}
		// The log is in time order: a stable sort keeps each user's.
		slices.SortStableFunc(perm, func(x, y int) int { return cmp.Compare(users[x], users[y]) })
		return perm
	})
}

// ensureReordered returns the path of a Parquet file in dir, named after
// the log with suffix, holding its (id, user_id, ts, amount) columns in
// the row order order returns for the users and event times of its rows,
// generating it (and the log) unless cached.
func ensureReordered(dir string, c Features4, suffix string, order func(users, tss []int64) []int) (path string, created bool, err error) {
	name := fmt.Sprintf("%s-%s.parquet", c.FileName()[:len(c.FileName())-len(".parquet")], suffix)
	path = filepath.Join(dir, name)
	if _, err := os.Stat(path); err == nil {
		return path, false, nil
	}
	log, _, err := EnsureParquet(dir, c)
	if err != nil {
		return "", false, err
	}
	var (
		ids, users, tss []int64
		amounts         []float64
	)
	_, err = ScanParquet(log, []string{"id", "user_id", "ts", "amount"}, 64*1024, func(rec arrow.RecordBatch) error {
		ids = append(ids, rec.Column(0).(*array.Int64).Int64Values()...)
		users = append(users, rec.Column(1).(*array.Int64).Int64Values()...)
		for _, t := range rec.Column(2).(*array.Timestamp).TimestampValues() {
			tss = append(tss, int64(t))
		}
		amounts = append(amounts, rec.Column(3).(*array.Float64).Float64Values()...)
		return nil
	})
	if err != nil {
		return "", false, err
	}
	perm := order(users, tss)

	tmp, err := os.CreateTemp(dir, name+".tmp*")
	if err != nil {
		return "", false, err
	}
	defer os.Remove(tmp.Name())
	w, err := NewParquetWriter(tmp, arrivalSchema)
	if err != nil {
		tmp.Close()
		return "", false, err
	}
	b := array.NewRecordBuilder(memory.DefaultAllocator, arrivalSchema)
	defer b.Release()
	for lo := 0; lo < len(perm) && err == nil; lo += 64 * 1024 {
		for _, r := range perm[lo:min(lo+64*1024, len(perm))] {
			b.Field(0).(*array.Int64Builder).Append(ids[r])
			b.Field(1).(*array.Int64Builder).Append(users[r])
			b.Field(2).(*array.TimestampBuilder).Append(arrow.Timestamp(tss[r]))
			b.Field(3).(*array.Float64Builder).Append(amounts[r])
		}
		rec := b.NewRecordBatch()
		err = w.Write(rec)
		rec.Release()
	}
	if cerr := w.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return "", false, fmt.Errorf("gen: write %s: %w", tmp.Name(), err)
	}
	if err := os.Chmod(tmp.Name(), 0o644); err != nil {
		return "", false, err
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return "", false, err
	}
	return path, true, nil
}
