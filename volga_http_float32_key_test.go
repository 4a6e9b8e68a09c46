package volga_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/volga-go/volga"
	"github.com/volga-go/volga/request"
	"github.com/volga-go/volga/source"
)

// A float32 PARTITION BY column holds float32 values: the key 0.1 is the
// float32 nearest 0.1, which as a float64 is 0.10000000149011612. A
// lookup of 0.1 (a float64, in process or from JSON) is that key; it
// was encoded as the float64 0.1, another key, and answered the empty
// frame.
func TestLookupFloat32Key(t *testing.T) {
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "k", Type: arrow.PrimitiveTypes.Float32},
		{Name: "ts", Type: arrow.PrimitiveTypes.Int64},
		{Name: "amount", Type: arrow.PrimitiveTypes.Int64},
	}, nil)
	keys := []float32{0.1, 1.1, -3.3, 1e-8}
	b := array.NewRecordBuilder(memory.DefaultAllocator, schema)
	defer b.Release()
	for i := range 12 {
		b.Field(0).(*array.Float32Builder).Append(keys[i%len(keys)])
		b.Field(1).(*array.Int64Builder).Append(int64(i) * 1000)
		b.Field(2).(*array.Int64Builder).Append(int64(i + 1))
	}
	rec := b.NewRecordBatch()
	defer rec.Release()
	p, err := volga.SQL(`SELECT k, count(*) OVER w AS n, sum(amount) OVER w AS s FROM tx
		WINDOW w AS (PARTITION BY k ORDER BY ts RANGE BETWEEN INTERVAL '1' HOUR PRECEDING AND CURRENT ROW)`,
		volga.WithSource("tx", source.NewMemory(schema, rec)), volga.WithParallelism(2))
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(p.Handler())
	defer srv.Close()
	at := time.UnixMilli(20_000)
	for i, k := range keys {
		want := []any{int64(3), int64(3*(i+1) + 4*3)} // rows i, i+4, i+8
		for _, given := range []any{k, float64(k), []float64{0.1, 1.1, -3.3, 1e-8}[i]} {
			res, err := p.Lookup(context.Background(), map[string]any{"k": given}, at, nil)
			if err != nil {
				t.Fatalf("Lookup(%v): %v", given, err)
			}
			if fmt.Sprint(res.Values) != fmt.Sprint(want) {
				t.Errorf("Lookup(%T %v) = %v, want %v", given, given, res.Values, want)
			}
		}
		for _, written := range []string{fmt.Sprint(k), fmt.Sprint(float64(k))} {
			status, body := post(t, srv.URL+request.FeaturesPath, fmt.Sprintf(`{"key":{"k":%s},"at":20000}`, written))
			if status != http.StatusOK || !strings.Contains(string(body), fmt.Sprintf(`"n":3,"s":%d`, want[1])) {
				t.Errorf("key %s over HTTP: %d %s; want n 3, s %d", written, status, body, want[1])
			}
		}
	}
}
