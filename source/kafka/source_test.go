package kafka_test

import (
	"context"
	"errors"
	"io"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/volga-go/volga/source"
	"github.com/volga-go/volga/source/kafka"
)

var eventSchema = arrow.NewSchema([]arrow.Field{
	{Name: "id", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
	{Name: "user", Type: arrow.BinaryTypes.String, Nullable: true},
	{Name: "amount", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
	{Name: "ok", Type: arrow.FixedWidthTypes.Boolean, Nullable: true},
	{Name: "ts", Type: arrow.FixedWidthTypes.Timestamp_ms, Nullable: true},
}, nil)

func open(t *testing.T, cfg kafka.Config) *kafka.Source {
	t.Helper()
	src, err := kafka.NewSource(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := src.Close(); err != nil {
			t.Error(err)
		}
	})
	return src
}

// checkEvent checks every column of a row decoded from event(i).
func checkEvent(t *testing.T, r row, parts int) {
	t.Helper()
	i := r.vals["id"].(int64)
	want := map[string]any{
		"id":     i,
		"user":   "u" + string(rune('0'+i%5)),
		"amount": float64(i) * 1.5,
		"ok":     i%2 == 0,
		"ts":     base.Add(time.Duration(i) * time.Second),
	}
	for k, v := range want {
		got := r.vals[k]
		if tv, ok := v.(time.Time); ok {
			if gt, ok := got.(time.Time); !ok || !gt.Equal(tv) {
				t.Fatalf("row %d: %s = %v, want %v", i, k, got, v)
			}
			continue
		}
		if got != v {
			t.Fatalf("row %d: %s = %#v, want %#v", i, k, got, v)
		}
	}
	if r.part != int(i)%parts {
		t.Fatalf("row %d in partition %d", i, r.part)
	}
}

func TestDirectReadsEveryPartition(t *testing.T) {
	addrs := newCluster(t, 4, "events")
	produce(t, addrs, events("events", 0, 200, 4)...)
	src := open(t, kafka.Config{Brokers: addrs, Topic: "events", Schema: eventSchema, TimeField: "ts", BatchSize: 16, StopAtEnd: true})
	if got := src.Partitions(); got != 4 {
		t.Fatalf("Partitions = %d", got)
	}
	if got := src.TimeColumn(); got != "ts" {
		t.Fatalf("TimeColumn = %q", got)
	}
	var rows []row
	ctx := context.Background()
	batches := 0
	for {
		rec, err := src.Read(ctx)
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if rec.NumRows() > 16 {
			t.Fatalf("batch of %d rows, BatchSize 16", rec.NumRows())
		}
		batches++
		rows = append(rows, batchRows(t, src, rec)...)
		rec.Release()
	}
	if len(rows) != 200 {
		t.Fatalf("read %d rows, want 200", len(rows))
	}
	last := map[int]int64{}
	seen := map[int64]bool{}
	for _, r := range rows {
		checkEvent(t, r, 4)
		id := r.vals["id"].(int64)
		if seen[id] {
			t.Fatalf("row %d read twice", id)
		}
		seen[id] = true
		if prev, ok := last[r.part]; ok && id <= prev {
			t.Fatalf("partition %d: row %d after %d", r.part, id, prev)
		}
		last[r.part] = id
	}
	if batches < 200/16 {
		t.Fatalf("%d batches", batches)
	}
	// A bounded source stays at its end.
	if _, err := src.Read(ctx); err != io.EOF {
		t.Fatalf("Read after the end: %v", err)
	}
	if src.DeadLetters() != 0 {
		t.Fatalf("DeadLetters = %d", src.DeadLetters())
	}
}

func TestInferSchema(t *testing.T) {
	addrs := newCluster(t, 2, "mixed")
	produce(t, addrs,
		&kgo.Record{Topic: "mixed", Partition: 0, Value: []byte(`{"i":1,"f":1,"b":true,"t":"2024-01-03T10:00:00Z","s":"x","n":null,"o":{"a":[1,2]}}`)},
		&kgo.Record{Topic: "mixed", Partition: 1, Value: []byte(`{"i":-7,"f":2.5,"b":false,"t":"2024-01-03T10:00:01.5Z","s":"2024","n":null,"o":[1],"late":"y"}`)},
		&kgo.Record{Topic: "mixed", Partition: 1, Value: []byte(`not json`)},
	)
	src := open(t, kafka.Config{Brokers: addrs, Topic: "mixed", TimeField: "t", StopAtEnd: true, SampleSize: 10})
	want := arrow.NewSchema([]arrow.Field{
		{Name: "i", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
		{Name: "f", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
		{Name: "b", Type: arrow.FixedWidthTypes.Boolean, Nullable: true},
		{Name: "t", Type: arrow.FixedWidthTypes.Timestamp_ms, Nullable: true},
		{Name: "s", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "n", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "o", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "late", Type: arrow.BinaryTypes.String, Nullable: true},
	}, nil)
	if !src.Schema().Equal(want) {
		t.Fatalf("schema\n%v\nwant\n%v", src.Schema(), want)
	}
	rows := readRows(t, src, -1)
	if len(rows) != 2 {
		t.Fatalf("%d rows", len(rows))
	}
	slices.SortFunc(rows, func(a, b row) int { return a.part - b.part })
	r0, r1 := rows[0].vals, rows[1].vals
	if r0["i"] != int64(1) || r0["f"] != 1.0 || r0["b"] != true || r0["o"] != `{"a":[1,2]}` || r0["n"] != nil || r0["late"] != nil {
		t.Fatalf("row 0: %v", r0)
	}
	if r1["i"] != int64(-7) || r1["f"] != 2.5 || r1["s"] != "2024" || r1["late"] != "y" ||
		!r1["t"].(time.Time).Equal(time.Date(2024, 1, 3, 10, 0, 1, 5e8, time.UTC)) {
		t.Fatalf("row 1: %v", r1)
	}
	if src.DeadLetters() != 1 {
		t.Fatalf("DeadLetters = %d", src.DeadLetters())
	}
}

func TestEventTimeFromMessageTimestamp(t *testing.T) {
	addrs := newCluster(t, 3, "events")
	produce(t, addrs, events("events", 0, 30, 3)...)
	src := open(t, kafka.Config{Brokers: addrs, Topic: "events", StopAtEnd: true, TimeColumn: "kafka_time"})
	if src.TimeColumn() != "kafka_time" {
		t.Fatalf("TimeColumn = %q", src.TimeColumn())
	}
	fields := src.Schema().Fields()
	if f := fields[len(fields)-1]; f.Name != "kafka_time" || !arrow.TypeEqual(f.Type, arrow.FixedWidthTypes.Timestamp_ms) {
		t.Fatalf("last field %v", f)
	}
	rows := readRows(t, src, -1)
	if len(rows) != 30 {
		t.Fatalf("%d rows", len(rows))
	}
	for _, r := range rows {
		checkEvent(t, r, 3) // ts, inferred as timestamp, is still a column
		id := r.vals["id"].(int64)
		if got := r.vals["kafka_time"].(time.Time); !got.Equal(base.Add(time.Duration(id) * time.Minute)) {
			t.Fatalf("row %d: kafka_time %v", id, got)
		}
	}
}

func TestSeekReplaysExactlyTheRest(t *testing.T) {
	addrs := newCluster(t, 3, "events")
	produce(t, addrs, events("events", 0, 150, 3)...)
	cfg := kafka.Config{Brokers: addrs, Topic: "events", Schema: eventSchema, TimeField: "ts", BatchSize: 7, StopAtEnd: true}
	first := open(t, cfg)
	head := readRows(t, first, 40)
	pos, err := first.Position()
	if err != nil {
		t.Fatal(err)
	}
	rest := readRows(t, first, -1)
	if len(head)+len(rest) != 150 {
		t.Fatalf("%d + %d rows", len(head), len(rest))
	}

	second := open(t, cfg)
	if err := second.Seek(pos); err != nil {
		t.Fatal(err)
	}
	again := readRows(t, second, -1)
	if !samePerPartition(rest, again) {
		t.Fatalf("replay differs:\n%v\n%v", ids(rest), ids(again))
	}

	// Seeking back on the same source replays too.
	if err := first.Seek(pos); err != nil {
		t.Fatal(err)
	}
	if again := readRows(t, first, -1); !samePerPartition(rest, again) {
		t.Fatal("replay on the same source differs")
	}
}

// samePerPartition compares the rows of each partition in order (the
// interleaving of partitions depends on timing).
func samePerPartition(a, b []row) bool {
	split := func(rows []row) map[int][]int64 {
		m := map[int][]int64{}
		for _, r := range rows {
			m[r.part] = append(m[r.part], r.vals["id"].(int64))
		}
		return m
	}
	ma, mb := split(a), split(b)
	if len(ma) != len(mb) {
		return false
	}
	for p, v := range ma {
		if !slices.Equal(v, mb[p]) {
			return false
		}
	}
	return true
}

func TestDeadLetters(t *testing.T) {
	addrs := newCluster(t, 2, "events", "events-dlq")
	recs := events("events", 0, 10, 2)
	bad := []*kgo.Record{
		{Topic: "events", Partition: 0, Key: []byte("k1"), Value: []byte(`{"id": 1`)},
		{Topic: "events", Partition: 1, Value: []byte(`[1,2]`)},
		{Topic: "events", Partition: 0, Value: []byte(`{"id":"seven","user":"u"}`)},
		{Topic: "events", Partition: 1, Value: []byte(`{"id":8,"ts":null}`)},
		{Topic: "events", Partition: 1, Value: []byte(`{"id":9,"ok":"maybe","ts":"2024-01-03T10:00:00Z"}`)},
	}
	produce(t, addrs, recs[:4]...)
	produce(t, addrs, bad...)
	produce(t, addrs, recs[4:]...)

	var mu sync.Mutex
	var letters []source.DeadLetter
	src := open(t, kafka.Config{
		Brokers: addrs, Topic: "events", Schema: eventSchema, TimeField: "ts", StopAtEnd: true,
		DeadLetterTopic: "events-dlq",
		DeadLetter: func(d source.DeadLetter) {
			mu.Lock()
			defer mu.Unlock()
			letters = append(letters, d)
		},
	})
	rows := readRows(t, src, -1)
	if len(rows) != 10 {
		t.Fatalf("%d good rows, want 10", len(rows))
	}
	for _, r := range rows {
		checkEvent(t, r, 2)
	}
	if src.DeadLetters() != 5 || len(letters) != 5 {
		t.Fatalf("DeadLetters = %d, handler got %d", src.DeadLetters(), len(letters))
	}
	// Partition 0 holds events 0 and 2, then the bad ones at offsets 2 and 3.
	// Partition 1 holds events 1 and 3, then the bad ones at offsets 2, 3, 4.
	want := map[string]struct {
		offset int64
		reason string
	}{
		`{"id": 1`:                  {2, "invalid JSON"},
		`[1,2]`:                     {2, "not a JSON object"},
		`{"id":"seven","user":"u"}`: {3, `field "id": cannot decode "seven" as int64`},
		`{"id":8,"ts":null}`:        {3, `event-time field "ts" is missing or null`},
		`{"id":9,"ok":"maybe","ts":"2024-01-03T10:00:00Z"}`: {4, `field "ok": cannot decode "maybe" as bool`},
	}
	for _, d := range letters {
		w, ok := want[string(d.Raw)]
		if !ok {
			t.Fatalf("unexpected dead letter %+v", d)
		}
		if d.Offset != w.offset || d.Reason != w.reason || !strings.HasPrefix(d.Source, "events/") {
			t.Errorf("dead letter %s: source %q offset %d reason %q, want offset %d reason %q", d.Raw, d.Source, d.Offset, d.Reason, w.offset, w.reason)
		}
	}

	dlq := consume(t, addrs, "events-dlq", 5)
	for _, r := range dlq {
		h := map[string]string{}
		for _, kv := range r.Headers {
			h[kv.Key] = string(kv.Value)
		}
		w := want[string(r.Value)]
		if h["volga-dead-letter-reason"] != w.reason || h["volga-dead-letter-topic"] != "events" || h["volga-dead-letter-offset"] == "" || h["volga-dead-letter-partition"] == "" {
			t.Errorf("dead-letter record %s: headers %v", r.Value, h)
		}
		if string(r.Value) == `{"id": 1` && string(r.Key) != "k1" {
			t.Errorf("dead-letter key %q", r.Key)
		}
	}
}

func TestGroupReadsAll(t *testing.T) {
	addrs := newCluster(t, 4, "events")
	produce(t, addrs, events("events", 0, 120, 4)...)
	src := open(t, kafka.Config{Brokers: addrs, Topic: "events", GroupID: "g", Schema: eventSchema, TimeField: "ts", BatchSize: 10, StopAtEnd: true})
	rows := readRows(t, src, -1)
	if len(rows) != 120 {
		t.Fatalf("%d rows", len(rows))
	}
	for _, r := range rows {
		checkEvent(t, r, 4)
	}
}

func TestGroupCommitAndRestart(t *testing.T) {
	addrs := newCluster(t, 3, "events")
	produce(t, addrs, events("events", 0, 90, 3)...)
	cfg := kafka.Config{Brokers: addrs, Topic: "events", GroupID: "features", Schema: eventSchema, TimeField: "ts", BatchSize: 5}

	first, err := kafka.NewSource(cfg)
	if err != nil {
		t.Fatal(err)
	}
	head := readRows(t, first, 30)
	pos, err := first.Position()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := first.Commit(ctx, pos); err != nil {
		t.Fatal(err)
	}
	// Rows read after the commit are not committed: they come again.
	more := readRows(t, first, 5)
	if err := first.Close(); err != nil {
		t.Fatal(err)
	}

	cfg.StopAtEnd = true
	second := open(t, cfg)
	rest := readRows(t, second, -1)
	if len(head)+len(rest) != 90 {
		t.Fatalf("%d rows before the commit, %d after the restart", len(head), len(rest))
	}
	all := append(ids(head), ids(rest)...)
	slices.Sort(all)
	for i, id := range all {
		if id != int64(i) {
			t.Fatalf("rows after the restart: %v", ids(rest))
		}
	}
	for _, id := range ids(more) {
		if !slices.Contains(ids(rest), id) {
			t.Fatalf("row %d read after the commit is not read again", id)
		}
	}
}

func TestGroupSeek(t *testing.T) {
	addrs := newCluster(t, 2, "events")
	produce(t, addrs, events("events", 0, 40, 2)...)
	cfg := kafka.Config{Brokers: addrs, Topic: "events", GroupID: "g", Schema: eventSchema, TimeField: "ts", BatchSize: 4, StopAtEnd: true}
	first := open(t, cfg)
	head := readRows(t, first, 12)
	pos, _ := first.Position()
	rest := readRows(t, first, -1)
	if len(head)+len(rest) != 40 {
		t.Fatalf("%d + %d rows", len(head), len(rest))
	}
	if err := first.Close(); err != nil {
		t.Fatal(err)
	}
	second := open(t, cfg) // nothing committed: the group would start at the beginning
	if err := second.Seek(pos); err != nil {
		t.Fatal(err)
	}
	if again := readRows(t, second, -1); !samePerPartition(rest, again) {
		t.Fatalf("replay differs:\n%v\n%v", ids(rest), ids(again))
	}
}

func TestMaxWaitFlushesAQuietTopic(t *testing.T) {
	addrs := newCluster(t, 2, "events")
	produce(t, addrs, events("events", 0, 4, 2)...) // before the start: skipped
	src := open(t, kafka.Config{Brokers: addrs, Topic: "events", Schema: eventSchema, TimeField: "ts", BatchSize: 1000, MaxWait: 50 * time.Millisecond, StartOffset: kafka.LastOffset})
	produce(t, addrs, events("events", 4, 7, 2)...)
	start := time.Now()
	rows := readRows(t, src, 3)
	if d := time.Since(start); d < 50*time.Millisecond || d > 5*time.Second {
		t.Fatalf("3 rows of a quiet topic took %v with MaxWait 50ms", d)
	}
	if got := ids(rows); len(got) != 3 || slices.Min(got) != 4 {
		t.Fatalf("rows %v, want 4, 5, 6", got)
	}
}

// TestIdleWake: on a quiet topic Read returns an empty batch (the
// source's schema, no partition) once Config.IdleWake passed with no row,
// so that the engine can move time-driven work on; a negative IdleWake
// blocks until rows come or ctx is done; rows produced later still come.
func TestIdleWake(t *testing.T) {
	addrs := newCluster(t, 2, "events")
	src := open(t, kafka.Config{Brokers: addrs, Topic: "events", Schema: eventSchema, TimeField: "ts", IdleWake: 50 * time.Millisecond, StartOffset: kafka.LastOffset})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	rec, err := src.Read(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if rec.NumRows() != 0 || !rec.Schema().Equal(src.Schema()) || src.PartitionOf(rec) != -1 {
		t.Fatalf("quiet topic: a batch of %d rows, schema %s, partition %d", rec.NumRows(), rec.Schema(), src.PartitionOf(rec))
	}
	rec.Release()
	produce(t, addrs, events("events", 0, 4, 2)...)
	if got := ids(readRows(t, src, 4)); len(got) != 4 {
		t.Fatalf("rows after the empty batch: %v", got)
	}

	blocking := open(t, kafka.Config{Brokers: addrs, Topic: "events", Schema: eventSchema, TimeField: "ts", IdleWake: -1, StartOffset: kafka.LastOffset})
	short, cancelShort := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancelShort()
	if rec, err := blocking.Read(short); !errors.Is(err, context.DeadlineExceeded) {
		if rec != nil {
			rec.Release()
		}
		t.Fatalf("IdleWake -1: Read gave %v, want the deadline", err)
	}
}

func TestReadCancelAndCloseLeaveNoGoroutines(t *testing.T) {
	addrs := newCluster(t, 3, "events")
	produce(t, addrs, events("events", 0, 3, 3)...)
	before := runtime.NumGoroutine()
	for _, group := range []string{"", "g"} {
		src, err := kafka.NewSource(kafka.Config{Brokers: addrs, Topic: "events", GroupID: group, Schema: eventSchema, TimeField: "ts"})
		if err != nil {
			t.Fatal(err)
		}
		readRows(t, src, 3)
		ctx, cancel := context.WithCancel(context.Background())
		time.AfterFunc(50*time.Millisecond, cancel)
		start := time.Now()
		if _, err := src.Read(ctx); !errors.Is(err, context.Canceled) {
			t.Fatalf("Read on cancel: %v", err)
		}
		if d := time.Since(start); d > 2*time.Second {
			t.Fatalf("Read returned %v after the cancel", d)
		}
		if err := src.Close(); err != nil {
			t.Fatal(err)
		}
		if _, err := src.Read(context.Background()); !errors.Is(err, kafka.ErrClosed) {
			t.Fatalf("Read after Close: %v", err)
		}
		if err := src.Close(); err != nil {
			t.Fatalf("second Close: %v", err)
		}
	}
	waitGoroutines(t, before)
}

func TestConfigErrors(t *testing.T) {
	addrs := newCluster(t, 1, "events", "empty")
	produce(t, addrs, events("events", 0, 2, 1)...)
	for _, tc := range []struct {
		name string
		cfg  kafka.Config
		want string
	}{
		{"no brokers", kafka.Config{Topic: "events"}, "Brokers is empty"},
		{"no topic", kafka.Config{Brokers: addrs}, "Topic is empty"},
		{"bad start", kafka.Config{Brokers: addrs, Topic: "events", StartOffset: 5}, "StartOffset"},
		{"unknown topic", kafka.Config{Brokers: addrs, Topic: "nope", Schema: eventSchema}, `topic "nope"`},
		{"empty topic, no schema", kafka.Config{Brokers: addrs, Topic: "empty"}, "no messages to infer a schema"},
		{"time field missing", kafka.Config{Brokers: addrs, Topic: "events", Schema: eventSchema, TimeField: "when"}, `time field "when" is not in the schema`},
		{"time field type", kafka.Config{Brokers: addrs, Topic: "events", Schema: eventSchema, TimeField: "user"}, `time field "user" is utf8`},
		{"time column clash", kafka.Config{Brokers: addrs, Topic: "events", Schema: eventSchema, TimeColumn: "ts"}, `already have a "ts" field`},
		{"unsupported type", kafka.Config{Brokers: addrs, Topic: "events", Schema: arrow.NewSchema([]arrow.Field{{Name: "x", Type: arrow.ListOf(arrow.PrimitiveTypes.Int64)}}, nil)}, "not supported"},
		{"dead letters to itself", kafka.Config{Brokers: addrs, Topic: "events", DeadLetterTopic: "events"}, "DeadLetterTopic"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src, err := kafka.NewSource(tc.cfg)
			if err == nil {
				src.Close()
				t.Fatal("no error")
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %q does not mention %q", err, tc.want)
			}
		})
	}
}

func TestPositionErrors(t *testing.T) {
	addrs := newCluster(t, 2, "events", "other")
	produce(t, addrs, events("events", 0, 2, 2)...)
	a := open(t, kafka.Config{Brokers: addrs, Topic: "events", Schema: eventSchema, TimeField: "ts"})
	b := open(t, kafka.Config{Brokers: addrs, Topic: "other", Schema: eventSchema, TimeField: "ts"})
	pos, err := a.Position()
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Seek(pos); err == nil || !strings.Contains(err.Error(), `position of topic "events"`) {
		t.Fatalf("Seek to another topic's position: %v", err)
	}
	for _, bad := range [][]byte{nil, {9}, pos[:len(pos)-1], append(slices.Clone(pos), 0)} {
		if err := a.Seek(bad); err == nil {
			t.Fatalf("Seek(%v) accepted", bad)
		}
	}
	if err := a.Commit(context.Background(), pos); !errors.Is(err, kafka.ErrNoGroup) {
		t.Fatalf("Commit without a group: %v", err)
	}
	if got := a.PartitionOf(nil); got != -1 {
		t.Fatalf("PartitionOf(nil) = %d", got)
	}
}

// Two members of a group share the partitions (scale-out): together they
// read every row, and after the rebalance each partition has one owner.
func TestGroupSharesPartitionsBetweenMembers(t *testing.T) {
	addrs := newCluster(t, 4, "events")
	produce(t, addrs, events("events", 0, 120, 4)...)
	cfg := kafka.Config{Brokers: addrs, Topic: "events", GroupID: "scale", Schema: eventSchema, TimeField: "ts", BatchSize: 8, HeartbeatInterval: 50 * time.Millisecond}
	a, b := open(t, cfg), open(t, cfg)

	var mu sync.Mutex
	seen := map[int64]int{}
	got := map[*kafka.Source]int{}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var wg sync.WaitGroup
	for _, src := range []*kafka.Source{a, b} {
		wg.Go(func() {
			for {
				rec, err := src.Read(ctx)
				if err != nil {
					return
				}
				rows, err := checkBatch(src, rec)
				rec.Release()
				if err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				for _, id := range ids(rows) {
					seen[id]++
				}
				got[src] += len(rows)
				mu.Unlock()
			}
		})
	}
	// Wait for every row, and for each member to own two partitions.
	for {
		mu.Lock()
		done := len(seen) == 120 && got[a] > 0 && got[b] > 0
		mu.Unlock()
		if done || ctx.Err() != nil {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		// Assigned is read from the test goroutine while Read runs: wait
		// for quiet by stopping the readers first.
		cancel()
		wg.Wait()
		pa, pb := a.Assigned(), b.Assigned()
		if len(pa) == 2 && len(pb) == 2 && !slices.ContainsFunc(pa, func(p int) bool { return slices.Contains(pb, p) }) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("assignments %v and %v", pa, pb)
		}
		ctx, cancel = context.WithTimeout(context.Background(), 200*time.Millisecond)
		for _, src := range []*kafka.Source{a, b} {
			wg.Go(func() {
				for {
					rec, err := src.Read(ctx)
					if err != nil {
						return
					}
					rec.Release()
				}
			})
		}
	}
	if len(seen) != 120 {
		t.Fatalf("%d distinct rows of 120", len(seen))
	}
	if got[a] == 0 || got[b] == 0 {
		t.Fatalf("rows per member: %d and %d", got[a], got[b])
	}
}

// With StopAtEnd, a group member assigned an empty partition is at its
// end at once.
func TestGroupStopAtEndWithEmptyPartitions(t *testing.T) {
	addrs := newCluster(t, 3, "events")
	produce(t, addrs, events("events", 0, 2, 3)...) // partitions 0 and 1; 2 stays empty
	src := open(t, kafka.Config{Brokers: addrs, Topic: "events", GroupID: "g", Schema: eventSchema, TimeField: "ts", StopAtEnd: true})
	if rows := readRows(t, src, -1); len(rows) != 2 {
		t.Fatalf("%d rows", len(rows))
	}
	if got := src.Assigned(); !slices.Equal(got, []int{0, 1, 2}) {
		t.Fatalf("Assigned = %v", got)
	}
}

// A position past the end of a partition is an error of Read, not a hang.
func TestSeekOutOfRange(t *testing.T) {
	addrs := newCluster(t, 1, "events")
	produce(t, addrs, events("events", 0, 3, 1)...)
	cfg := kafka.Config{Brokers: addrs, Topic: "events", Schema: eventSchema, TimeField: "ts"}
	probe := open(t, cfg)
	readRows(t, probe, 3)
	pos, _ := probe.Position()
	pos[len(pos)-1] += 100 // offset 3 -> a varint far past the end
	src := open(t, cfg)
	if err := src.Seek(pos); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, err := src.Read(ctx)
	if err == nil || ctx.Err() != nil || !strings.Contains(err.Error(), "partition 0") {
		t.Fatalf("Read at an offset past the end: %v", err)
	}
	t.Log(err)
}

// waitAssigned reads (empty batches, IdleWake short) until the group
// assigned src partitions.
func waitAssigned(t *testing.T, src *kafka.Source) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	for len(src.Assigned()) == 0 {
		rec, err := src.Read(ctx)
		if err != nil {
			t.Fatalf("waiting for an assignment: %v", err)
		}
		if rec.NumRows() != 0 {
			t.Fatalf("a batch of %d rows before anything was produced", rec.NumRows())
		}
		rec.Release()
	}
}

// In a group, a partition with no committed offset starts at
// StartOffset, resolved when it is assigned: the position holds that
// offset from then on, so that a restore from a checkpoint taken before
// the partition's first row replays the rows produced since, instead of
// starting again at the (later) end of the partition.
func TestGroupPositionHoldsTheResolvedStart(t *testing.T) {
	addrs := newCluster(t, 1, "events")
	produce(t, addrs, events("events", 0, 4, 1)...) // before the start: skipped
	cfg := kafka.Config{Brokers: addrs, Topic: "events", GroupID: "g", Schema: eventSchema, TimeField: "ts",
		StartOffset: kafka.LastOffset, IdleWake: 20 * time.Millisecond, MaxWait: 10 * time.Millisecond}
	first, err := kafka.NewSource(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer first.Close()
	waitAssigned(t, first)
	pos, err := first.Position() // the checkpoint
	if err != nil {
		t.Fatal(err)
	}
	if next, err := kafka.DecodePosition("events", pos); err != nil || len(next) != 1 || next[0] != 4 {
		t.Fatalf("position after the assignment: %v %v, want map[0:4]", next, err)
	}
	produce(t, addrs, events("events", 4, 7, 1)...)
	if got := ids(readRows(t, first, 3)); !slices.Equal(got, []int64{4, 5, 6}) {
		t.Fatalf("rows %v", got)
	}
	// A crash: nothing committed; the restart restores the checkpoint.
	if err := first.Close(); err != nil {
		t.Fatal(err)
	}
	second := open(t, cfg)
	if err := second.Seek(pos); err != nil {
		t.Fatal(err)
	}
	if got := ids(readRows(t, second, 3)); !slices.Equal(got, []int64{4, 5, 6}) {
		t.Fatalf("rows after the restore %v, want 4 5 6", got)
	}
}

// Messages that are not rows are dead letters with a reason of their own,
// their original bytes, partition and offset, also in the dead-letter
// topic: a tombstone (no value), an empty value, invalid UTF-8 (which
// encoding/json accepts in strings, but a string column must not hold).
func TestDeadLetterEdgeCases(t *testing.T) {
	addrs := newCluster(t, 1, "events", "dlq")
	good := event("events", 0, 1)
	badUTF8 := []byte(`{"id":1,"user":"u` + "\xff" + `","ts":"2024-01-03T10:00:01Z"}`)
	produce(t, addrs, good,
		&kgo.Record{Topic: "events", Key: []byte("gone")}, // tombstone
		&kgo.Record{Topic: "events", Value: []byte{}},
		&kgo.Record{Topic: "events", Value: badUTF8, Headers: []kgo.RecordHeader{{Key: "trace", Value: []byte("t1")}}},
		event("events", 2, 1),
	)
	var mu sync.Mutex
	var letters []source.DeadLetter
	src := open(t, kafka.Config{Brokers: addrs, Topic: "events", Schema: eventSchema, TimeField: "ts", StopAtEnd: true,
		DeadLetterTopic: "dlq",
		DeadLetter: func(d source.DeadLetter) {
			mu.Lock()
			defer mu.Unlock()
			letters = append(letters, d)
		}})
	if got := ids(readRows(t, src, -1)); !slices.Equal(got, []int64{0, 2}) {
		t.Fatalf("rows %v", got)
	}
	want := []struct {
		offset int64
		raw    []byte
		reason string
	}{
		{1, nil, "message has no value (a tombstone)"},
		{2, []byte{}, "invalid JSON"},
		{3, badUTF8, "invalid UTF-8"},
	}
	mu.Lock()
	defer mu.Unlock()
	if len(letters) != len(want) || src.DeadLetters() != int64(len(want)) {
		t.Fatalf("dead letters %d (%d counted): %+v", len(letters), src.DeadLetters(), letters)
	}
	for i, w := range want {
		d := letters[i]
		if d.Offset != w.offset || string(d.Raw) != string(w.raw) || d.Reason != w.reason || d.Source != "events/0" {
			t.Errorf("dead letter %d: %+v, want offset %d raw %q reason %q", i, d, w.offset, w.raw, w.reason)
		}
	}
	for i, r := range consume(t, addrs, "dlq", len(want)) {
		h := map[string]string{}
		for _, kv := range r.Headers {
			h[kv.Key] = string(kv.Value)
		}
		w := want[i]
		if string(r.Value) != string(w.raw) || h["volga-dead-letter-reason"] != w.reason ||
			h["volga-dead-letter-partition"] != "0" || h["volga-dead-letter-offset"] != strconv.FormatInt(w.offset, 10) {
			t.Errorf("dead-letter record %d: value %q headers %v", i, r.Value, h)
		}
		if i == 2 && h["trace"] != "t1" {
			t.Errorf("dead-letter record lost the original header: %v", h)
		}
		if i == 0 && string(r.Key) != "gone" {
			t.Errorf("tombstone key %q", r.Key)
		}
	}
}
