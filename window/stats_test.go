package window

import (
	"sync"
	"sync/atomic"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/volga-go/volga/agg"
)

// TestStatsCountsInChunks: Stats counts retained rows and resident keys a
// chunk of keys at a time (statsLockKeys) with the lock released in
// between. Over several chunks' worth of keys, on an idle operator, the
// counts equal a walk of every key state; while another goroutine keeps
// pushing and advancing (run with -race, which checks the chunked walk
// for data races), Stats returns counts within what the operator can
// hold.
func TestStatsCountsInChunks(t *testing.T) {
	const keys = 3*statsLockKeys + 17
	recs := benchRecords(keys, 20, 4096)
	defer func() {
		for _, r := range recs {
			r.Release()
		}
	}()
	amount := agg.Arg{Type: arrow.PrimitiveTypes.Float64, Col: 0}
	op := openOp(t, Config{TsCol: 0, SeqCol: 1, KeyCols: []int{2}, ArgCols: []int{3}, Windows: []Spec{
		{Frame: Frame{Preceding: 20_000}, Aggs: []agg.Func{bindFunc(t, "sum", amount)}},
	}})
	defer op.Close()

	var stop atomic.Bool
	var wg sync.WaitGroup
	wg.Add(1)
	var scrapes int
	go func() {
		defer wg.Done()
		for !stop.Load() {
			st := op.Stats()
			if st.Retained < 0 || st.ResidentKeys > st.Keys || st.Retained > st.RowsIn {
				t.Errorf("scrape during the run: %+v", st)
				return
			}
			scrapes++
		}
	}()
	for _, rec := range recs {
		push(t, op, rec)
		ts := rec.Column(0).(*array.Int64).Int64Values()
		advanceDiscard(t, op, ts[len(ts)-1]-1)
	}
	stop.Store(true)
	wg.Wait()
	if scrapes == 0 {
		t.Fatal("no scrape ran during the pushes")
	}

	st := op.Stats()
	var retained int64
	resident := 0
	for _, ks := range op.states {
		if ks != nil {
			retained += int64(ks.rows.Len())
			resident++
		}
	}
	if st.Keys != len(op.states) || st.Keys <= 2*statsLockKeys || st.ResidentKeys != resident || st.Retained != retained {
		t.Fatalf("Stats: keys %d resident %d retained %d; the key states: %d keys, %d resident, %d rows", st.Keys, st.ResidentKeys, st.Retained, len(op.states), resident, retained)
	}
	if retained == 0 || retained == st.RowsIn {
		t.Fatalf("%d rows retained of %d in: the window should hold some and have dropped some", retained, st.RowsIn)
	}
}
