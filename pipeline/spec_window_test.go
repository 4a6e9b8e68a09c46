package pipeline_test

import (
	"testing"

	"github.com/volga-go/volga/volgatest"
)

// specEvents is the input of the SPEC section 3 tests, ts in epoch
// milliseconds. Key a has two peers at 2000 (ids 2 and 3) and a row that
// arrives last but is early in event time (id 7 at 1500); key b has one
// row. Sorted in (event time, arrival) order, key a is
//
//	id  1     7     2     3     4     6
//	ts  1000  1500  2000  2000  3000  5000
//	x   1     128   2     4     8     32
//
// so every frame sum below is a distinct sum of powers of two, and each
// value says exactly which rows were in the frame.
const specEvents = `
id,k,ts,x
1,a,1000,1
2,a,2000,2
3,a,2000,4
4,a,3000,8
5,b,2000,16
6,a,5000,32
7,a,1500,128
`

// TestSpecOverFrames checks each frame of SPEC section 3 on specEvents,
// values worked out by hand (see the comment of each case). Output is one
// row per input row, in input order (batch mode).
func TestSpecOverFrames(t *testing.T) {
	var n any // NULL
	tests := []struct {
		name, frame string
		// sums by id 1..7
		want []any
	}{
		{
			// t-1000 <= ts <= t, peers included: id 2 sees 1, 7, 2 and
			// its peer 3 (1+128+2+4), id 4 sees 2, 3, 4 (2+4+8).
			"range current", "RANGE BETWEEN INTERVAL '1' SECOND PRECEDING AND CURRENT ROW",
			[]any{int64(1), int64(135), int64(135), int64(14), int64(16), int64(32), int64(129)},
		},
		{
			// The same minus the row itself; its peer stays: id 2 sees
			// 1+128+4, id 3 sees 1+128+2. A first row sees nothing: NULL.
			"range exclude current", "RANGE BETWEEN INTERVAL '1' SECOND PRECEDING AND CURRENT ROW EXCLUDE CURRENT ROW",
			[]any{n, int64(133), int64(131), int64(6), n, n, int64(1)},
		},
		{
			// t-2000 <= ts <= t-1000: the current row and its peers are
			// out. id 4 (3000) sees [1000, 2000]: 1+128+2+4; id 6 (5000)
			// sees [3000, 4000]: 8; id 7 (1500) sees [-500, 500]: none.
			"range ending preceding", "RANGE BETWEEN INTERVAL '2' SECOND PRECEDING AND INTERVAL '1' SECOND PRECEDING",
			[]any{n, int64(1), int64(1), int64(135), n, int64(8), n},
		},
		{
			// The current row is not in the frame, so excluding it
			// changes nothing.
			"range ending preceding exclude", "RANGE BETWEEN INTERVAL '2' SECOND PRECEDING AND INTERVAL '1' SECOND PRECEDING EXCLUDE CURRENT ROW",
			[]any{n, int64(1), int64(1), int64(135), n, int64(8), n},
		},
		{
			// Equal start and end: exactly the rows at t-1000.
			"range single instant", "RANGE BETWEEN INTERVAL '1' SECOND PRECEDING AND INTERVAL '1' SECOND PRECEDING",
			[]any{n, int64(1), int64(1), int64(6), n, n, n},
		},
		{
			// ts <= t: id 4 sees every a row up to 3000: 1+128+2+4+8.
			"unbounded", "RANGE BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW",
			[]any{int64(1), int64(135), int64(135), int64(143), int64(16), int64(175), int64(129)},
		},
		{
			// ts <= t-1000.
			"unbounded ending preceding", "RANGE BETWEEN UNBOUNDED PRECEDING AND INTERVAL '1' SECOND PRECEDING",
			[]any{n, int64(1), int64(1), int64(135), n, int64(143), n},
		},
		{
			// ts <= t minus the row itself; its peers stay.
			"unbounded exclude current", "RANGE BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW EXCLUDE CURRENT ROW",
			[]any{n, int64(133), int64(131), int64(135), n, int64(143), int64(1)},
		},
		{
			// No frame clause: the SQL default, RANGE BETWEEN UNBOUNDED
			// PRECEDING AND CURRENT ROW (as in DuckDB).
			"default frame", "",
			[]any{int64(1), int64(135), int64(135), int64(143), int64(16), int64(175), int64(129)},
		},
		{
			// The row and the one before it in (ts, arrival) order
			// 1, 7, 2, 3, 4, 6: id 2 sees 7 and itself (128+2), id 3 sees
			// its peer 2 (2+4), id 7 sees 1 (1+128).
			"rows", "ROWS BETWEEN 1 PRECEDING AND CURRENT ROW",
			[]any{int64(1), int64(130), int64(6), int64(12), int64(16), int64(40), int64(129)},
		},
		{
			"rows short form", "ROWS 1 PRECEDING",
			[]any{int64(1), int64(130), int64(6), int64(12), int64(16), int64(40), int64(129)},
		},
		{
			// The one row before, without the row itself.
			"rows exclude current", "ROWS BETWEEN 1 PRECEDING AND CURRENT ROW EXCLUDE CURRENT ROW",
			[]any{n, int64(128), int64(2), int64(4), n, int64(8), int64(1)},
		},
		{
			// The current row alone.
			"rows zero", "ROWS BETWEEN 0 PRECEDING AND CURRENT ROW",
			[]any{int64(1), int64(2), int64(4), int64(8), int64(16), int64(32), int64(128)},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			q := `SELECT id, sum(x) OVER (PARTITION BY k ORDER BY ts ` + tt.frame + `) AS s FROM tx`
			got := volgatest.Run(t, q, volgatest.CSV(specEvents))
			if len(got.Rows) != 7 {
				t.Fatalf("%d output rows, want one per input row (7)", len(got.Rows))
			}
			for i, r := range got.Rows {
				if r["id"] != int64(i+1) || r["s"] != tt.want[i] {
					t.Errorf("row %d: id %v sum %v, want id %d sum %v", i, r["id"], r["s"], i+1, tt.want[i])
				}
			}
		})
	}
}
