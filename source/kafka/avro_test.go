package kafka_test

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math/big"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/hamba/avro/v2"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/volga-go/volga/source"
	"github.com/volga-go/volga/source/kafka"
)

// fakeRegistry serves schemas by id as a Confluent schema registry does
// (GET /schemas/ids/{id}); while failing is set it answers 503.
type fakeRegistry struct {
	mu       sync.Mutex
	schemas  map[int]string
	requests atomic.Int64
	failing  atomic.Bool
	url      string
}

func newFakeRegistry(t *testing.T, schemas map[int]string) *fakeRegistry {
	t.Helper()
	r := &fakeRegistry{schemas: schemas}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		r.requests.Add(1)
		if r.failing.Load() {
			http.Error(w, `{"error_code":50302,"message":"unavailable"}`, http.StatusServiceUnavailable)
			return
		}
		id, err := strconv.Atoi(strings.TrimPrefix(req.URL.Path, "/schemas/ids/"))
		r.mu.Lock()
		s, ok := r.schemas[id]
		r.mu.Unlock()
		if req.Method != http.MethodGet || err != nil || !ok {
			http.Error(w, `{"error_code":40403,"message":"Schema not found"}`, http.StatusNotFound)
			return
		}
		w.Header().Set("Content-Type", "application/vnd.schemaregistry.v1+json")
		json.NewEncoder(w).Encode(map[string]string{"schema": s})
	}))
	t.Cleanup(srv.Close)
	r.url = srv.URL
	return r
}

// framed encodes v with schema s as Confluent's serializers frame it.
func framed(t *testing.T, id int, s string, v any) []byte {
	t.Helper()
	data, err := avro.Marshal(avro.MustParse(s), v)
	if err != nil {
		t.Fatal(err)
	}
	out := []byte{0, 0, 0, 0, 0}
	binary.BigEndian.PutUint32(out[1:], uint32(id))
	return append(out, data...)
}

const (
	txV1 = `{"type":"record","name":"tx","namespace":"shop","fields":[
		{"name":"id","type":"long"},
		{"name":"user","type":"string"},
		{"name":"amount","type":"double"},
		{"name":"ts","type":{"type":"long","logicalType":"timestamp-millis"}}]}`
	// txV2 adds a country and lets the amount be null.
	txV2 = `{"type":"record","name":"tx","namespace":"shop","fields":[
		{"name":"id","type":"long"},
		{"name":"user","type":"string"},
		{"name":"amount","type":["null","double"],"default":null},
		{"name":"ts","type":{"type":"long","logicalType":"timestamp-millis"}},
		{"name":"country","type":["null","string"],"default":null}]}`
)

// TestAvroSchemaRegistry: Avro values framed with schema ids read through
// a schema registry over HTTP, each with its own writer's schema while the
// topic's schema evolves: the columns are the newest schema's, a field an
// older writer lacks is NULL, and the values equal those encoded. Values
// not framed, of an id the registry lacks, or cut short are dead letters
// with their reason, and each schema is fetched once.
func TestAvroSchemaRegistry(t *testing.T) {
	reg := newFakeRegistry(t, map[int]string{1: txV1, 7: txV2})
	addrs := newCluster(t, 2, "tx")
	r := rand.New(rand.NewPCG(3, 4))
	var recs []*kgo.Record
	want := map[int64]map[string]any{}
	var badReasons []string
	for i := range 200 {
		ts := base.Add(time.Duration(i) * time.Second)
		user := fmt.Sprintf("u%d", r.IntN(9))
		amount := float64(r.IntN(10000)) / 100
		var value []byte
		row := map[string]any{"id": int64(i), "user": user, "amount": amount, "ts": ts, "country": nil}
		switch {
		case i%50 == 13:
			value = []byte(`{"id": 1}`)
			badReasons = append(badReasons, "not a schema-registry Avro value")
			row = nil
		case i%50 == 27:
			value = framed(t, 1, txV1, map[string]any{"id": int64(i), "user": user, "amount": amount, "ts": ts})
			binary.BigEndian.PutUint32(value[1:], 99)
			badReasons = append(badReasons, "schema id not in the registry: 99")
			row = nil
		case i%50 == 41:
			value = framed(t, 1, txV1, map[string]any{"id": int64(i), "user": user, "amount": amount, "ts": ts})
			value = value[:len(value)-3]
			badReasons = append(badReasons, "undecodable Avro")
			row = nil
		case i < 100:
			value = framed(t, 1, txV1, map[string]any{"id": int64(i), "user": user, "amount": amount, "ts": ts})
		default:
			var a, c any
			if r.IntN(4) > 0 {
				a = amount
			} else {
				row["amount"] = nil
			}
			if r.IntN(2) == 0 {
				c = "NL"
				row["country"] = "NL"
			}
			value = framed(t, 7, txV2, map[string]any{"id": int64(i), "user": user, "amount": a, "ts": ts, "country": c})
		}
		if row != nil {
			want[int64(i)] = row
		}
		recs = append(recs, &kgo.Record{Topic: "tx", Partition: int32(i % 2), Value: value, Timestamp: ts})
	}
	produce(t, addrs, recs...)

	var dead []source.DeadLetter
	var mu sync.Mutex
	src := open(t, kafka.Config{Brokers: addrs, Topic: "tx", Format: kafka.FormatAvro, SchemaRegistry: reg.url,
		TimeField: "ts", StopAtEnd: true, SampleSize: 20,
		DeadLetter: func(d source.DeadLetter) { mu.Lock(); dead = append(dead, d); mu.Unlock() }})
	wantSchema := arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
		{Name: "user", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "amount", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
		{Name: "ts", Type: &arrow.TimestampType{Unit: arrow.Millisecond, TimeZone: "UTC"}, Nullable: true},
		{Name: "country", Type: arrow.BinaryTypes.String, Nullable: true},
	}, nil)
	if !src.Schema().Equal(wantSchema) {
		t.Fatalf("schema\n%v\nwant the newest writer's\n%v", src.Schema(), wantSchema)
	}
	rows := readRows(t, src, -1)
	if len(rows) != len(want) {
		t.Fatalf("%d rows, want %d", len(rows), len(want))
	}
	for _, row := range rows {
		id := row.vals["id"].(int64)
		w := want[id]
		got := copyMap(row.vals)
		got["ts"] = row.vals["ts"].(time.Time)
		if !reflect.DeepEqual(got, w) {
			t.Fatalf("row %d: %v, want %v", id, got, w)
		}
		delete(want, id)
	}
	if len(dead) != len(badReasons) || src.DeadLetters() != int64(len(badReasons)) {
		t.Fatalf("%d dead letters (DeadLetters %d), want %d: %+v", len(dead), src.DeadLetters(), len(badReasons), dead)
	}
	var reasons []string
	for _, d := range dead {
		reasons = append(reasons, d.Reason)
	}
	slices.Sort(reasons)
	slices.Sort(badReasons)
	for i := range reasons {
		if !strings.Contains(reasons[i], badReasons[i]) {
			t.Errorf("dead letter reason %q, want one saying %q", reasons[i], badReasons[i])
		}
	}
	// Ids 1 and 7 once each, 99 once (remembered as unknown).
	if n := reg.requests.Load(); n != 3 {
		t.Errorf("%d registry requests, want 3", n)
	}
}

func copyMap(m map[string]any) map[string]any {
	out := make(map[string]any, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// TestAvroRegistryOutage: while the registry cannot be reached, Read
// fails and consumes nothing; once it answers, every message is read.
func TestAvroRegistryOutage(t *testing.T) {
	reg := newFakeRegistry(t, map[int]string{1: txV1})
	addrs := newCluster(t, 1, "tx")
	var recs []*kgo.Record
	for i := range 10 {
		ts := base.Add(time.Duration(i) * time.Second)
		recs = append(recs, &kgo.Record{Topic: "tx", Value: framed(t, 1, txV1, map[string]any{"id": int64(i), "user": "u", "amount": 1.5, "ts": ts})})
	}
	produce(t, addrs, recs...)
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
		{Name: "ts", Type: arrow.FixedWidthTypes.Timestamp_ms, Nullable: true},
	}, nil)
	src := open(t, kafka.Config{Brokers: addrs, Topic: "tx", Format: kafka.FormatAvro, SchemaRegistry: reg.url,
		Schema: schema, TimeField: "ts", StopAtEnd: true})
	reg.failing.Store(true)
	ctx, cancel := contextTimeout(10 * time.Second)
	defer cancel()
	if rec, err := src.Read(ctx); err == nil {
		rec.Release()
		t.Fatal("Read succeeded while the registry failed")
	} else if !strings.Contains(err.Error(), "503") {
		t.Fatalf("error %v, want the registry's 503", err)
	}
	if n := reg.requests.Load(); n != 4 {
		t.Errorf("%d registry requests, want 4 (three more tries)", n)
	}
	if src.DeadLetters() != 0 {
		t.Fatalf("%d dead letters while the registry failed", src.DeadLetters())
	}
	reg.failing.Store(false)
	rows := readRows(t, src, -1)
	if got := ids(rows); !slices.Equal(got, []int64{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}) {
		t.Fatalf("ids %v after the registry came back", got)
	}
}

// TestAvroBareSchema: bare Avro values of AvroSchema, with the columns
// that every kind of field maps to and the values they decode to.
func TestAvroBareSchema(t *testing.T) {
	const s = `{"type":"record","name":"all","fields":[
		{"name":"b","type":"boolean"},
		{"name":"i","type":"int"},
		{"name":"l","type":"long"},
		{"name":"f","type":"float"},
		{"name":"d","type":"double"},
		{"name":"s","type":"string"},
		{"name":"e","type":{"type":"enum","name":"color","symbols":["RED","GREEN"]}},
		{"name":"day","type":{"type":"int","logicalType":"date"}},
		{"name":"us","type":{"type":"long","logicalType":"timestamp-micros"}},
		{"name":"dec","type":{"type":"bytes","logicalType":"decimal","precision":6,"scale":2}},
		{"name":"tags","type":{"type":"array","items":"string"}},
		{"name":"n","type":["null","long"]},
		{"name":"multi","type":["null","long","string"]},
		{"name":"raw","type":"bytes"},
		{"name":"ts","type":{"type":"long","logicalType":"timestamp-millis"}}]}`
	addrs := newCluster(t, 1, "all")
	ts := base.Add(90 * time.Minute)
	us := time.Date(2024, 2, 1, 8, 30, 0, 123456000, time.UTC)
	day := time.Date(2024, 2, 29, 0, 0, 0, 0, time.UTC)
	bare := func(v map[string]any) []byte {
		data, err := avro.Marshal(avro.MustParse(s), v)
		if err != nil {
			t.Fatal(err)
		}
		return data
	}
	rec := func(v []byte) *kgo.Record { return &kgo.Record{Topic: "all", Value: v} }
	one := map[string]any{"b": true, "i": -5, "l": int64(1) << 40, "f": float32(1.25), "d": -2.5, "s": "héllo",
		"e": "GREEN", "day": day, "us": us, "dec": mustRat(t, "123.45"), "tags": []any{"a", "b"},
		"n": nil, "multi": map[string]any{"string": "x"}, "raw": []byte{1, 2}, "ts": ts}
	two := copyMap(one)
	two["n"], two["multi"], two["b"] = int64(42), map[string]any{"long": int64(7)}, false
	badText := copyMap(one)
	badText["s"] = "caf\xe9" // Latin-1, not UTF-8
	produce(t, addrs, rec(bare(one)), rec(bare(two)), rec([]byte{0xff}), rec(bare(badText)))
	var reasons []string
	var mu sync.Mutex
	src := open(t, kafka.Config{Brokers: addrs, Topic: "all", Format: kafka.FormatAvro, AvroSchema: s, TimeField: "ts", StopAtEnd: true,
		DeadLetter: func(d source.DeadLetter) { mu.Lock(); reasons = append(reasons, d.Reason); mu.Unlock() }})
	str := arrow.BinaryTypes.String
	var fields []arrow.Field
	for _, f := range []struct {
		name string
		dt   arrow.DataType
	}{
		{"b", arrow.FixedWidthTypes.Boolean}, {"i", arrow.PrimitiveTypes.Int32}, {"l", arrow.PrimitiveTypes.Int64},
		{"f", arrow.PrimitiveTypes.Float32}, {"d", arrow.PrimitiveTypes.Float64}, {"s", str}, {"e", str},
		{"day", arrow.FixedWidthTypes.Date32}, {"us", &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}},
		{"dec", arrow.PrimitiveTypes.Float64}, {"tags", str}, {"n", arrow.PrimitiveTypes.Int64}, {"multi", str}, {"raw", str},
		{"ts", &arrow.TimestampType{Unit: arrow.Millisecond, TimeZone: "UTC"}},
	} {
		fields = append(fields, arrow.Field{Name: f.name, Type: f.dt, Nullable: true})
	}
	if want := arrow.NewSchema(fields, nil); !src.Schema().Equal(want) {
		t.Fatalf("schema\n%v\nwant\n%v", src.Schema(), want)
	}
	rows := readRows(t, src, -1)
	if len(rows) != 2 || src.DeadLetters() != 2 {
		t.Fatalf("%d rows, %d dead letters; want 2 and 2", len(rows), src.DeadLetters())
	}
	slices.Sort(reasons)
	if len(reasons) != 2 || !strings.HasPrefix(reasons[0], `field "s": cannot decode "caf\xe9" as utf8: not valid UTF-8`) || !strings.HasPrefix(reasons[1], "undecodable Avro") {
		t.Errorf("dead-letter reasons %q", reasons)
	}
	// sink.Rows widens int32 and float32 (the schema above checks them).
	wantRow := map[string]any{"b": true, "i": int64(-5), "l": int64(1) << 40, "f": 1.25, "d": -2.5, "s": "héllo",
		"e": "GREEN", "day": day, "us": us, "dec": 123.45, "tags": `["a","b"]`, "n": nil, "multi": "x",
		"raw": `"AQI="`, "ts": ts}
	for i, row := range rows {
		if i == 1 {
			wantRow["n"], wantRow["multi"], wantRow["b"] = int64(42), "7", false
		}
		got := copyMap(row.vals)
		for k, v := range got {
			if tm, ok := v.(time.Time); ok {
				got[k] = tm.UTC()
			}
		}
		for k, v := range wantRow {
			if !reflect.DeepEqual(got[k], v) {
				t.Errorf("row %d: %s = %#v, want %#v", i, k, got[k], v)
			}
		}
		if len(got) != len(wantRow) {
			t.Errorf("row %d: %d columns, want %d", i, len(got), len(wantRow))
		}
	}
}

// TestAvroConfigErrors: Avro settings that cannot work fail NewSource
// with what to set.
func TestAvroConfigErrors(t *testing.T) {
	addrs := newCluster(t, 1, "tx")
	for _, c := range []struct {
		cfg  kafka.Config
		want string
	}{
		{kafka.Config{Format: "xml"}, `Config.Format "xml"`},
		{kafka.Config{Format: kafka.FormatAvro}, "needs Config.SchemaRegistry"},
		{kafka.Config{Format: kafka.FormatAvro, SchemaRegistry: "http://x", AvroSchema: txV1}, "not both"},
		{kafka.Config{Format: kafka.FormatAvro, SchemaRegistry: "ftp://u:secret@x"}, "want an http:// or https:// URL"},
		{kafka.Config{Format: kafka.FormatAvro, AvroSchema: `{"type":"record"`}, "Config.AvroSchema"},
		{kafka.Config{Format: kafka.FormatAvro, AvroSchema: `"long"`}, "not a record"},
		{kafka.Config{SchemaRegistry: "http://x"}, `for Format "avro"`},
	} {
		c.cfg.Brokers, c.cfg.Topic, c.cfg.StopAtEnd = addrs, "tx", true
		src, err := kafka.NewSource(c.cfg)
		if err == nil {
			src.Close()
			t.Errorf("%+v: no error", c.cfg)
			continue
		}
		if !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "secret") {
			t.Errorf("error %q, want it to say %q (and hide passwords)", err, c.want)
		}
	}
}

func contextTimeout(d time.Duration) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), d)
}

func mustRat(t *testing.T, s string) *big.Rat {
	t.Helper()
	r, ok := new(big.Rat).SetString(s)
	if !ok {
		t.Fatalf("bad rational %q", s)
	}
	return r
}
