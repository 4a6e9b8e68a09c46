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

// TestLookupDateAndBinaryKeys: PARTITION BY columns of type date32,
// date64 and binary are looked up, in process and over HTTP, by the
// values their rows hold: a date as "2006-01-02" (or a time on that UTC
// day), binary as the string of its bytes. Every lookup of such a key
// failed with "type ... is not supported" (HTTP 500), although the run
// accepted the rows.
func TestLookupDateAndBinaryKeys(t *testing.T) {
	day := func(s string) time.Time {
		d, err := time.Parse(time.DateOnly, s)
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	dates := []string{"1969-12-31", "2024-01-03", "2024-02-29"}
	for _, kt := range []arrow.DataType{arrow.FixedWidthTypes.Date32, arrow.FixedWidthTypes.Date64, arrow.BinaryTypes.Binary} {
		t.Run(kt.String(), func(t *testing.T) {
			schema := arrow.NewSchema([]arrow.Field{
				{Name: "k", Type: kt},
				{Name: "ts", Type: arrow.PrimitiveTypes.Int64},
				{Name: "amount", Type: arrow.PrimitiveTypes.Int64},
			}, nil)
			b := array.NewRecordBuilder(memory.DefaultAllocator, schema)
			defer b.Release()
			for i := range 12 {
				d := dates[i%3]
				switch kb := b.Field(0).(type) {
				case *array.Date32Builder:
					kb.Append(arrow.Date32FromTime(day(d)))
				case *array.Date64Builder:
					kb.Append(arrow.Date64FromTime(day(d)))
				case *array.BinaryBuilder:
					kb.Append([]byte("\x00" + d))
				}
				b.Field(1).(*array.Int64Builder).Append(int64(i) * 1000)
				b.Field(2).(*array.Int64Builder).Append(int64(i + 1))
			}
			rec := b.NewRecordBatch()
			defer rec.Release()
			p, err := volga.SQL(`SELECT k, count(*) OVER w AS n, sum(amount) OVER w AS s FROM tx
				WINDOW w AS (PARTITION BY k ORDER BY ts RANGE BETWEEN INTERVAL '1' HOUR PRECEDING AND CURRENT ROW)`,
				volga.WithSource("tx", source.NewMemory(schema, rec)))
			if err != nil {
				t.Fatal(err)
			}
			if err := p.Run(context.Background()); err != nil {
				t.Fatal(err)
			}
			srv := httptest.NewServer(p.Handler())
			defer srv.Close()
			at := time.UnixMilli(20_000)
			for i, d := range dates {
				wantS := 4*i + 22 // rows i, i+3, i+6, i+9, of amount row+1
				given := []any{d, day(d), day(d).Add(13 * time.Hour)}
				json := fmt.Sprintf("%q", d)
				if kt.ID() == arrow.BINARY {
					given = []any{"\x00" + d, []byte("\x00" + d)}
					json = fmt.Sprintf(`"\u0000%s"`, d)
				}
				for _, g := range given {
					res, err := p.Lookup(context.Background(), map[string]any{"k": g}, at, nil)
					if err != nil {
						t.Fatalf("Lookup(%v): %v", g, err)
					}
					if want := fmt.Sprint([]any{int64(4), int64(wantS)}); fmt.Sprint(res.Values) != want {
						t.Errorf("Lookup(%T %v) = %v, want %v", g, g, res.Values, want)
					}
				}
				status, body := post(t, srv.URL+request.FeaturesPath, fmt.Sprintf(`{"key":{"k":%s},"at":20000}`, json))
				if status != http.StatusOK || !strings.Contains(string(body), fmt.Sprintf(`"n":4,"s":%d`, wantS)) {
					t.Errorf("key %s over HTTP: %d %s; want n 4, s %d", json, status, body, wantS)
				}
			}
			// A value that is not of the type is the client's mistake.
			if status, body := post(t, srv.URL+request.FeaturesPath, `{"key":{"k":true},"at":20000}`); status != http.StatusBadRequest {
				t.Errorf("a boolean key: %d %s, want 400", status, body)
			}
		})
	}
}
