package main

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hamba/avro/v2"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"gocloud.dev/blob"

	"github.com/volga-go/volga/internal/testutil"
	"github.com/volga-go/volga/sink"
	"github.com/volga-go/volga/source"
)

// TestRunSourceInS3: --source names objects in S3 (a fake S3 server over
// HTTP): a prefix and a glob of CSV objects give exactly the output of
// the same rows read from a local file.
func TestRunSourceInS3(t *testing.T) {
	srv := testutil.S3Server(t, "volga")
	bucketURL := testutil.S3URL(srv, "volga")
	ctx := context.Background()
	b, err := blob.OpenBucket(ctx, bucketURL)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	lines := strings.SplitAfter(strings.TrimSuffix(txCSV, "\n"), "\n")
	header, rows := lines[0], lines[1:]
	half := 4 // the first object holds a row of each column type (1.5 makes amount a float)
	for name, part := range map[string][]string{"events/part-0.csv": rows[:half], "events/part-1.csv": rows[half:], "events/_SUCCESS": nil} {
		text := header + strings.Join(part, "")
		if !strings.HasSuffix(text, "\n") {
			text += "\n"
		}
		if err := b.WriteAll(ctx, name, []byte(text), nil); err != nil {
			t.Fatal(err)
		}
	}
	dir := files(t, "q.sql", spendSQL, "tx.csv", txCSV)
	code, want, stderr := cli(t, ctx, dir, "", "run", "--sql", "q.sql", "--source", "tx=tx.csv")
	if code != exitOK || want == "" {
		t.Fatalf("local run: exit %d: %s", code, stderr)
	}
	query := bucketURL[strings.Index(bucketURL, "?"):]
	for _, src := range []string{"s3://volga/events/" + query, "s3://volga/events/part-*.csv" + query} {
		code, got, stderr := cli(t, ctx, dir, "", "run", "--sql", "q.sql", "--source", "tx="+src)
		if code != exitOK || got != want {
			t.Errorf("--source tx=%s: exit %d, stderr %q, output\n%s\nwant, as from the local file,\n%s", src, code, stderr, got, want)
		}
	}
	code, _, stderr = cli(t, ctx, dir, "", "run", "--sql", "q.sql", "--source", "tx=s3://volga/nothing.csv"+query)
	if code == exitOK || !strings.Contains(stderr, "nothing.csv") || !strings.Contains(stderr, "not exist") {
		t.Errorf("a missing object: exit %d, stderr %q", code, stderr)
	}
}

// TestRunKafkaAvro: a topic of Avro values framed with schema ids of a
// schema registry (served over HTTP on loopback) gives the output of the
// same events as JSON messages; an undecodable value is a dead letter.
func TestRunKafkaAvro(t *testing.T) {
	const schema = `{"type":"record","name":"tx","fields":[
		{"name":"user_id","type":"string"},
		{"name":"ts","type":{"type":"long","logicalType":"timestamp-millis"}},
		{"name":"amount","type":["null","double"]}]}`
	reg := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/schemas/ids/5" {
			http.NotFound(w, r)
			return
		}
		json.NewEncoder(w).Encode(map[string]string{"schema": schema})
	}))
	defer reg.Close()
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, "json", "avro"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	addr := c.ListenAddrs()[0]
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	s := avro.MustParse(schema)
	base := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
	var recs []*kgo.Record
	for i := range 30 {
		user := fmt.Sprintf("u%d", i%3)
		ts := base.Add(time.Duration(i) * 7 * time.Minute)
		amount := float64(i) * 1.25
		recs = append(recs, &kgo.Record{Topic: "json",
			Value: fmt.Appendf(nil, `{"user_id":%q,"ts":%q,"amount":%g}`, user, ts.Format(time.RFC3339), amount)})
		data, err := avro.Marshal(s, map[string]any{"user_id": user, "ts": ts, "amount": amount})
		if err != nil {
			t.Fatal(err)
		}
		framed := binary.BigEndian.AppendUint32([]byte{0}, 5)
		recs = append(recs, &kgo.Record{Topic: "avro", Value: append(framed, data...)})
	}
	recs = append(recs, &kgo.Record{Topic: "avro", Value: []byte{0, 0, 0, 0, 5, 0xff}})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	dir := files(t, "q.sql", spendSQL)
	code, want, stderr := cli(t, ctx, dir, "", "run", "--sql", "q.sql", "--source", fmt.Sprintf("tx=kafka://%s/json?time_field=ts", addr))
	if code != exitOK || strings.Count(want, "\n") != 31 {
		t.Fatalf("JSON topic: exit %d, stderr %q, output\n%s", code, stderr, want)
	}
	src := fmt.Sprintf("tx=kafka://%s/avro?time_field=ts&format=avro&schema_registry=%s", addr, url.QueryEscape(reg.URL))
	code, got, stderr := cli(t, ctx, dir, "", "run", "--sql", "q.sql", "--source", src)
	if code != exitOK || got != want {
		t.Fatalf("Avro topic: exit %d, stderr %q, output\n%s\nwant, as from the JSON topic,\n%s", code, stderr, got, want)
	}
	if !strings.Contains(stderr, "dead letter: avro/0:30: undecodable Avro") {
		t.Errorf("the undecodable value was not reported as a dead letter: %q", stderr)
	}
}

// TestRunSinkExistingDirectory: --sink naming an existing directory
// without a trailing slash writes Parquet files into it, as sink.Open
// does (the command line refused it, asking for the slash), and they read
// back as the rows of a CSV output of the same run.
func TestRunSinkExistingDirectory(t *testing.T) {
	dir := files(t, "q.sql", spendSQL, "tx.csv", txCSV)
	if err := os.Mkdir(filepath.Join(dir, "out"), 0o755); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	code, want, stderr := cli(t, ctx, dir, "", "run", "--sql", "q.sql", "--source", "tx=tx.csv")
	if code != exitOK {
		t.Fatalf("to stdout: exit %d: %s", code, stderr)
	}
	code, stdout, stderr := cli(t, ctx, dir, "", "run", "--sql", "q.sql", "--source", "tx=tx.csv", "--sink", "out")
	if code != exitOK || stdout != "" {
		t.Fatalf("--sink out: exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
	src, err := source.Open(filepath.Join(dir, "out"))
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	var b strings.Builder
	w := sink.NewCSV(&b)
	for {
		rec, err := src.Read(ctx)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if err := w.Write(ctx, rec); err != nil {
			t.Fatal(err)
		}
		rec.Release()
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if b.String() != want {
		t.Fatalf("the directory's Parquet files read back as\n%s\nwant, as the CSV output,\n%s", b.String(), want)
	}
}
