package volgatest_test

import (
	"math"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/volga-go/volga/volgatest"
)

// TestExpectUnsignedColumns: sink.Value gives every unsigned column as
// uint64, so a pipeline passing a uint32 column through must match a want
// of plain integers ("got 3, want 3" was reported as a mismatch).
func TestExpectUnsignedColumns(t *testing.T) {
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "user_id", Type: arrow.BinaryTypes.String},
		{Name: "ts", Type: &arrow.TimestampType{Unit: arrow.Millisecond, TimeZone: "UTC"}},
		{Name: "amount", Type: arrow.PrimitiveTypes.Float64},
		{Name: "qty", Type: arrow.PrimitiveTypes.Uint32},
	}, nil)
	events := volgatest.Table(schema, [][]any{
		{"u1", "2024-01-01T00:00:00Z", 10.0, uint32(3)},
		{"u1", "2024-01-01T00:30:00Z", 5.0, uint32(4)},
	})
	const q = `SELECT user_id, ts, qty, sum(amount) OVER w AS spend_1h
FROM tx WINDOW w AS (PARTITION BY user_id ORDER BY ts
RANGE BETWEEN INTERVAL '1' HOUR PRECEDING AND CURRENT ROW)`
	got := volgatest.Run(t, q, events)
	if v := got.Rows[0]["qty"]; v != uint64(3) {
		t.Fatalf("qty of row 0 is %v (%T), want uint64 3", v, v)
	}
	ft := &fakeT{}
	volgatest.Expect(ft, got, "user_id,ts,qty,spend_1h\nu1,2024-01-01T00:00:00Z,3,10\nu1,2024-01-01T00:30:00Z,4,15")
	ft.mustPass(t)
	ft = &fakeT{}
	volgatest.Expect(ft, got, []map[string]any{{"qty": 3}, {"qty": 4.0}})
	ft.mustPass(t)
	ft = &fakeT{}
	volgatest.Expect(ft, got, "qty\n3\n5")
	ft.mustFail(t, "row 1", "column qty: got 4, want 5")

	// Exactly, beyond int64 and beyond float64's precision.
	big := []map[string]any{{"n": uint64(math.MaxUint64)}}
	ft = &fakeT{}
	volgatest.Expect(ft, big, []map[string]any{{"n": uint64(math.MaxUint64)}})
	ft.mustPass(t)
	ft = &fakeT{}
	volgatest.Expect(ft, big, []map[string]any{{"n": uint64(math.MaxUint64 - 1)}})
	ft.mustFail(t, "column n: got 18446744073709551615, want 18446744073709551614")
	ft = &fakeT{}
	volgatest.Expect(ft, big, []map[string]any{{"n": -1}})
	ft.mustFail(t, "column n: got 18446744073709551615, want -1")
}

// TestMapsUnsigned: Maps takes every Go integer, unsigned ones included,
// as its documentation says.
func TestMapsUnsigned(t *testing.T) {
	e := volgatest.Maps([]map[string]any{{"a": uint(3)}, {"a": uint64(4)}, {"a": 5}})
	if e.Err() != nil {
		t.Fatal(e.Err())
	}
	if ty := e.Schema().Field(0).Type; !arrow.TypeEqual(ty, arrow.PrimitiveTypes.Int64) {
		t.Errorf("type %s, want int64", ty)
	}
	if e := volgatest.Maps([]map[string]any{{"a": uint64(math.MaxUint64)}}); e.Err() == nil {
		t.Error("a uint64 beyond int64 was accepted into an int64 column")
	}
}
