package source_test

import (
	"context"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"path/filepath"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/volga-go/volga/source"
)

// nullableTS is usSchema with NULLs allowed in ts.
var nullableTS = arrow.NewSchema([]arrow.Field{
	{Name: "ts", Type: usSchema.Field(0).Type, Nullable: true},
	usSchema.Field(1), usSchema.Field(2),
}, nil)

// writeTimes writes the given microsecond times (math.MinInt64: NULL) to
// a Parquet file in row groups of group rows.
func writeTimes(t *testing.T, path string, us []int64, group int) {
	t.Helper()
	b := array.NewRecordBuilder(memory.DefaultAllocator, nullableTS)
	defer b.Release()
	for i, v := range us {
		if v == math.MinInt64 {
			b.Field(0).AppendNull()
		} else {
			b.Field(0).(*array.TimestampBuilder).Append(arrow.Timestamp(v))
		}
		b.Field(1).(*array.StringBuilder).Append("u")
		b.Field(2).(*array.Float64Builder).Append(float64(i))
	}
	rec := b.NewRecordBatch()
	defer rec.Release()
	writeRecord(t, path, rec, int64(group))
}

// TestParquetLowerBound checks LowerBound against the rows themselves:
// after every Read it is the least time, in milliseconds rounded down, of
// the row groups with rows not yet returned, so no later row is below it.
func TestParquetLowerBound(t *testing.T) {
	for seed := range uint64(20) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(seed, 7))
			dir := t.TempDir()
			files := 1 + rng.IntN(3)
			group := 1 + rng.IntN(9)
			var paths []string
			// groups lists every row group's rows, in read order.
			var groups [][]int64
			base := int64(1704276000_000000)
			for f := range files {
				n := rng.IntN(30)
				us := make([]int64, n)
				for i := range us {
					// Mostly rising, with jitter and negative offsets so
					// that rounding down matters; some NULLs.
					us[i] = base + int64(i)*1500 - rng.Int64N(4000) - 1_000_000
					if rng.IntN(10) == 0 {
						us[i] = math.MinInt64
					}
				}
				base += int64(n) * 1500
				path := filepath.Join(dir, fmt.Sprintf("%d.parquet", f))
				writeTimes(t, path, us, group)
				paths = append(paths, path)
				for lo := 0; lo < n; lo += group {
					groups = append(groups, us[lo:min(lo+group, n)])
				}
			}
			src, err := source.NewParquetFiles(paths, source.WithBatchSize(1+rng.IntN(7)))
			if err != nil {
				t.Fatal(err)
			}
			defer src.Close()
			read := 0 // rows returned so far
			check := func() {
				t.Helper()
				got, ok := src.LowerBound("ts")
				if !ok {
					t.Fatalf("after %d rows: no bound", read)
				}
				want := int64(math.MaxInt64)
				skip := read
				for _, g := range groups {
					if skip >= len(g) {
						skip -= len(g)
						continue
					}
					skip = 0
					for _, v := range g {
						if v != math.MinInt64 {
							want = min(want, floorDiv(v, 1000))
						}
					}
				}
				if got != want {
					t.Fatalf("after %d rows: bound %d, want %d", read, got, want)
				}
			}
			check()
			for {
				rec, err := src.Read(context.Background())
				if err == io.EOF {
					break
				}
				if err != nil {
					t.Fatal(err)
				}
				read += int(rec.NumRows())
				rec.Release()
				check()
			}
		})
	}
}

func floorDiv(a, b int64) int64 {
	q := a / b
	if a%b != 0 && (a < 0) != (b < 0) {
		q--
	}
	return q
}

func TestParquetLowerBoundUnknown(t *testing.T) {
	path := filepath.Join(t.TempDir(), "a.parquet")
	writeParquet(t, path, 0, 10)
	src, err := source.NewParquet(path)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	for _, col := range []string{"amount", "user", "nope"} {
		if b, ok := src.LowerBound(col); ok {
			t.Errorf("LowerBound(%q) = %d, want none", col, b)
		}
	}
	if b, ok := src.LowerBound("ts"); !ok || b != 1704276000_000 {
		t.Errorf("LowerBound(ts) = %d, %v; want 1704276000000", b, ok)
	}
}
