package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// txCSV is a small transaction log, in event-time order.
const txCSV = `user_id,ts,amount
u1,2024-01-01T00:00:00Z,10
u2,2024-01-01T00:10:00Z,5
u1,2024-01-01T00:30:00Z,20
u1,2024-01-01T01:15:00Z,1.5
u2,2024-01-01T01:20:00Z,7
u1,2024-01-01T02:00:00Z,3
`

// spendSQL computes, for every transaction, the user's spend, count and
// largest amount over the last hour (the row itself included).
const spendSQL = `SELECT user_id, ts, amount,
       sum(amount) OVER w AS spend_1h,
       count(*) OVER w AS n_1h,
       max(amount) OVER w AS max_1h
FROM tx
WINDOW w AS (PARTITION BY user_id ORDER BY ts
             RANGE BETWEEN INTERVAL '1' HOUR PRECEDING AND CURRENT ROW)
`

// spendCSV is spendSQL over txCSV, worked out by hand: the 01:15 row of u1
// sees 00:30 and itself (00:00 is 75 minutes back), the 02:00 row sees
// 01:15 and itself.
const spendCSV = `user_id,ts,amount,spend_1h,n_1h,max_1h
u1,2024-01-01T00:00:00Z,10,10,1,10
u2,2024-01-01T00:10:00Z,5,5,1,5
u1,2024-01-01T00:30:00Z,20,30,2,20
u1,2024-01-01T01:15:00Z,1.5,21.5,2,20
u2,2024-01-01T01:20:00Z,7,7,1,7
u1,2024-01-01T02:00:00Z,3,4.5,2,3
`

// cli runs the command in-process in dir and returns its exit status and
// output. Arguments may refer to files in dir by their base name.
func cli(t *testing.T, ctx context.Context, dir, stdin string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	t.Chdir(dir)
	defer t.Chdir(wd)
	var out, errw bytes.Buffer
	code = run(ctx, args, strings.NewReader(stdin), &out, &errw)
	return code, out.String(), errw.String()
}

// files writes name/content pairs into a new temporary directory.
func files(t *testing.T, kv ...string) string {
	t.Helper()
	dir := t.TempDir()
	for i := 0; i+1 < len(kv); i += 2 {
		if err := os.WriteFile(filepath.Join(dir, kv[i]), []byte(kv[i+1]), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestRunOutput(t *testing.T) {
	spendJSONL := `{"user_id":"u1","ts":"2024-01-01T00:00:00Z","amount":10,"spend_1h":10,"n_1h":1,"max_1h":10}
{"user_id":"u2","ts":"2024-01-01T00:10:00Z","amount":5,"spend_1h":5,"n_1h":1,"max_1h":5}
{"user_id":"u1","ts":"2024-01-01T00:30:00Z","amount":20,"spend_1h":30,"n_1h":2,"max_1h":20}
{"user_id":"u1","ts":"2024-01-01T01:15:00Z","amount":1.5,"spend_1h":21.5,"n_1h":2,"max_1h":20}
{"user_id":"u2","ts":"2024-01-01T01:20:00Z","amount":7,"spend_1h":7,"n_1h":1,"max_1h":7}
{"user_id":"u1","ts":"2024-01-01T02:00:00Z","amount":3,"spend_1h":4.5,"n_1h":2,"max_1h":3}
`
	tests := []struct {
		name    string
		stdin   string
		args    []string
		outFile string // where the output goes; "" is stdout
		want    string
	}{
		{"csv to stdout", "", []string{"run", "--sql", "q.sql", "--source", "tx=tx.csv"}, "", spendCSV},
		{"explicit stdout and batch", "", []string{"run", "--sql", "q.sql", "--source", "tx=tx.csv", "--mode", "batch", "--sink", "-"}, "", spendCSV},
		{"single-dash flags", "", []string{"run", "-sql", "q.sql", "-source", "tx=tx.csv"}, "", spendCSV},
		{"table name is case-insensitive", "", []string{"run", "--sql", "q.sql", "--source", "TX=tx.csv"}, "", spendCSV},
		{"query from stdin", spendSQL, []string{"run", "--sql", "-", "--source", "tx=tx.csv"}, "", spendCSV},
		{"csv file sink", "", []string{"run", "--sql", "q.sql", "--source", "tx=tx.csv", "--sink", "out.csv"}, "out.csv", spendCSV},
		{"jsonl file sink", "", []string{"run", "--sql", "q.sql", "--source", "tx=tx.csv", "--sink", "out.jsonl"}, "out.jsonl", spendJSONL},
		{"jsonl to stdout", "", []string{"run", "--sql", "q.sql", "--source", "tx=tx.csv", "--format", "jsonl"}, "", spendJSONL},
		{"jsonl source", "", []string{"run", "--sql", "q.sql", "--source", "tx=tx.jsonl"}, "", spendCSV},
		{"stream mode", "", []string{"run", "--sql", "q.sql", "--source", "tx=tx.csv", "--mode", "stream", "--max-out-of-order", "10m"}, "", spendCSV},
		{"parallelism 2", "", []string{"run", "--sql", "q.sql", "--source", "tx=tx.csv", "--parallelism", "2"}, "", spendCSV},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := files(t, "q.sql", spendSQL, "tx.csv", txCSV, "tx.jsonl", csvToJSONL(t, txCSV))
			code, stdout, stderr := cli(t, context.Background(), dir, tc.stdin, tc.args...)
			if code != 0 || stderr != "" {
				t.Fatalf("exit %d, stderr %q", code, stderr)
			}
			got := stdout
			if tc.outFile != "" {
				if stdout != "" {
					t.Errorf("stdout = %q, want nothing when writing to a file", stdout)
				}
				got = readFile(t, filepath.Join(dir, tc.outFile))
			}
			if got != tc.want {
				t.Errorf("output:\n%s\nwant:\n%s", got, tc.want)
			}
		})
	}
}

// csvToJSONL turns the simple CSV above (no quoting; numbers unquoted,
// everything else a string) into JSON lines.
func csvToJSONL(t *testing.T, csv string) string {
	t.Helper()
	lines := strings.Split(strings.TrimSpace(csv), "\n")
	header := strings.Split(lines[0], ",")
	var b strings.Builder
	for _, l := range lines[1:] {
		fields := strings.Split(l, ",")
		b.WriteByte('{')
		for i, f := range fields {
			if i > 0 {
				b.WriteByte(',')
			}
			var v any = f
			var num json.Number
			if err := json.Unmarshal([]byte(f), &num); err == nil {
				v = num
			}
			k, _ := json.Marshal(header[i])
			val, _ := json.Marshal(v)
			fmt.Fprintf(&b, "%s:%s", k, val)
		}
		b.WriteString("}\n")
	}
	return b.String()
}

// randomTx is a larger log in event-time order (epoch milliseconds, ties
// included) for the equivalence tests.
func randomTx(n int) string {
	r := rand.New(rand.NewPCG(7, 11))
	var b strings.Builder
	b.WriteString("user_id,ts,amount\n")
	ts := int64(1_704_067_200_000)
	for range n {
		ts += r.Int64N(120_000) // 0 to 2 minutes: some ties
		fmt.Fprintf(&b, "u%d,%d,%g\n", r.IntN(7), ts, float64(r.IntN(2000))/4)
	}
	return b.String()
}

const equivSQL = `SELECT user_id, ts, amount,
  sum(amount) OVER w AS spend_1h, count(*) OVER w AS n_1h, avg(amount) OVER w AS avg_1h,
  min(amount) OVER (PARTITION BY user_id ORDER BY ts ROWS BETWEEN 3 PRECEDING AND CURRENT ROW) AS min_4,
  max(amount) OVER (PARTITION BY user_id ORDER BY ts RANGE BETWEEN INTERVAL '1' DAY PRECEDING AND CURRENT ROW EXCLUDE CURRENT ROW) AS max_prev_24h
FROM tx
WINDOW w AS (PARTITION BY user_id ORDER BY ts RANGE BETWEEN INTERVAL '1' HOUR PRECEDING AND CURRENT ROW)
`

// TestRunEquivalence checks that parallelism and stream mode (on in-order
// data) change nothing in the output, byte for byte.
func TestRunEquivalence(t *testing.T) {
	dir := files(t, "q.sql", equivSQL, "tx.csv", randomTx(3000))
	base := []string{"run", "--sql", "q.sql", "--source", "tx=tx.csv"}
	code, want, stderr := cli(t, context.Background(), dir, "", base...)
	if code != 0 || stderr != "" {
		t.Fatalf("batch run: exit %d, stderr %q", code, stderr)
	}
	if n := strings.Count(want, "\n"); n != 3001 {
		t.Fatalf("batch run wrote %d lines, want 3001", n)
	}
	for _, extra := range [][]string{
		{"--parallelism", "2"},
		{"--parallelism", "4"},
		{"--mode", "stream"},
		{"--mode", "stream", "--batch-size", "7"},
		{"--mode", "stream", "--max-out-of-order", "1m", "--parallelism", "2", "--batch-size", "100"},
		{"--mode", "stream", "--watermark-interval", "5ms", "--parallelism", "2", "--batch-size", "50"},
		{"--mode", "stream", "--watermark-interval", "1h", "--watermark-max-rows", "120", "--parallelism", "2", "--batch-size", "50"},
	} {
		t.Run(strings.Join(extra, " "), func(t *testing.T) {
			code, got, stderr := cli(t, context.Background(), dir, "", append(base, extra...)...)
			if code != 0 || stderr != "" {
				t.Fatalf("exit %d, stderr %q", code, stderr)
			}
			if got != want {
				t.Errorf("output differs from the batch run with parallelism 1:\n%s", firstDiff(got, want))
			}
		})
	}
}

func firstDiff(got, want string) string {
	g, w := strings.Split(got, "\n"), strings.Split(want, "\n")
	for i := range max(len(g), len(w)) {
		var a, b string
		if i < len(g) {
			a = g[i]
		}
		if i < len(w) {
			b = w[i]
		}
		if a != b {
			return fmt.Sprintf("line %d:\n got  %q\n want %q", i+1, a, b)
		}
	}
	return "(no difference)"
}

func TestRunDeadLetters(t *testing.T) {
	in := "user_id,ts,amount\n" +
		"u1,2024-01-01T00:00:00Z,10\n" +
		"u1,2024-01-01T00:10:00Z\n" + // line 3: a field short
		"u1,2024-01-01T00:20:00Z,2\n" +
		"u1,2024-01-01T00:30:00Z,4,extra\n" + // line 5: a field too many
		"u1,2024-01-01T00:40:00Z,8\n"
	dir := files(t, "q.sql", spendSQL, "tx.csv", in)
	code, stdout, stderr := cli(t, context.Background(), dir, "", "run", "--sql", "q.sql", "--source", "tx=tx.csv")
	if code != 0 {
		t.Fatalf("exit %d, stderr %q", code, stderr)
	}
	wantErr := "volga: dead letter: tx.csv:3: wrong number of fields: got 2, want 3\n" +
		"volga: dead letter: tx.csv:5: wrong number of fields: got 4, want 3\n" +
		"volga: 2 dead letters skipped; 3 rows read\n"
	if stderr != wantErr {
		t.Errorf("stderr:\n%s\nwant:\n%s", stderr, wantErr)
	}
	wantOut := "user_id,ts,amount,spend_1h,n_1h,max_1h\n" +
		"u1,2024-01-01T00:00:00Z,10,10,1,10\n" +
		"u1,2024-01-01T00:20:00Z,2,12,2,10\n" +
		"u1,2024-01-01T00:40:00Z,8,20,3,10\n"
	if stdout != wantOut {
		t.Errorf("stdout:\n%s\nwant:\n%s", stdout, wantOut)
	}
}

func TestRunLateRows(t *testing.T) {
	// One row per batch, so the watermark moves between rows: with no
	// out-of-orderness allowed, 3000 arrives after 5000 and 6500 after 7000,
	// both behind the watermark.
	in := "user_id,ts,amount\nu1,1000,1\nu1,5000,2\nu1,3000,4\nu1,7000,8\nu1,6500,16\n"
	sql := `SELECT ts, sum(amount) OVER (PARTITION BY user_id ORDER BY ts
	        RANGE BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) AS total FROM tx`
	dir := files(t, "q.sql", sql, "tx.csv", in)
	args := []string{"run", "--sql", "q.sql", "--source", "tx=tx.csv", "--mode", "stream", "--batch-size", "1", "--max-out-of-order", "0s"}

	code, stdout, stderr := cli(t, context.Background(), dir, "", args...)
	if code != 0 {
		t.Fatalf("exit %d, stderr %q", code, stderr)
	}
	if want := "ts,total\n1000,1\n5000,3\n7000,11\n"; stdout != want {
		t.Errorf("stdout:\n%s\nwant:\n%s", stdout, want)
	}
	if want := "volga: 2 late rows not emitted (at or behind the watermark, the newest event time minus 0s); raise --max-out-of-order or set --allowed-lateness to keep them\n"; stderr != want {
		t.Errorf("stderr:\n%s\nwant:\n%s", stderr, want)
	}

	code, _, stderr = cli(t, context.Background(), dir, "", append(args, "--late-sink", "late.csv")...)
	if code != 0 || !strings.Contains(stderr, "written to late.csv") {
		t.Fatalf("exit %d, stderr %q", code, stderr)
	}
	if got, want := readFile(t, filepath.Join(dir, "late.csv")), "user_id,ts,amount\nu1,3000,4\nu1,6500,16\n"; got != want {
		t.Errorf("late.csv:\n%s\nwant:\n%s", got, want)
	}

	// A bound of 2s keeps 6500 (the watermark is 5000 then) but not 3000
	// (at the watermark 3000 exactly).
	args[len(args)-1] = "2s"
	code, stdout, _ = cli(t, context.Background(), dir, "", args...)
	if want := "ts,total\n1000,1\n5000,3\n6500,19\n7000,27\n"; code != 0 || stdout != want {
		t.Errorf("exit %d, stdout:\n%s\nwant:\n%s", code, stdout, want)
	}
}

func TestRunErrors(t *testing.T) {
	badColumn := "SELECT user_id,\n  sum(amt) OVER (PARTITION BY user_id ORDER BY ts ROWS BETWEEN 1 PRECEDING AND CURRENT ROW) AS s\nFROM tx\n"
	badSyntax := "SELECT user_id, sum(amount) OVER w\nFROM tx\nWINDOW w AS (PARTITION BY user_id ORDER BY ts\n  RANGE BETWEEN INTERVAL '1' HOUR FOLLOWING AND CURRENT ROW)\n"
	tests := []struct {
		name string
		args []string
		code int
		want string // the whole stderr line, without the newline
	}{
		{"no command", nil, 2, `volga: no command given; commands: run, serve, group, backfill, check, help, version (see 'volga help')`},
		{"unknown command", []string{"deploy"}, 2, `volga: unknown command "deploy"; commands: run, serve, group, backfill, check, help, version (see 'volga help')`},
		{"missing --sql", []string{"run", "--source", "tx=tx.csv"}, 2, `volga: run: missing --sql FILE (see 'volga help run')`},
		{"missing --source", []string{"run", "--sql", "q.sql"}, 2, `volga: run: missing --source NAME=PATH for the query's table (see 'volga help run')`},
		{"unknown flag", []string{"run", "--sql", "q.sql", "--source", "tx=tx.csv", "--fast"}, 2, `volga: run: flag provided but not defined: --fast (see 'volga help run')`},
		{"stray argument", []string{"run", "--sql", "q.sql", "--source", "tx=tx.csv", "extra"}, 2, `volga: run: unexpected argument "extra"; flags come as --name value (see 'volga help run')`},
		{"bad --source", []string{"run", "--sql", "q.sql", "--source", "tx.csv"}, 2, `volga: run: invalid value "tx.csv" for flag --source: want NAME=PATH, e.g. tx=transactions.csv (see 'volga help run')`},
		{"bad duration", []string{"run", "--sql", "q.sql", "--source", "tx=tx.csv", "--mode", "stream", "--max-out-of-order", "5x"}, 2, `volga: run: invalid value "5x" for flag --max-out-of-order: want a duration such as 30s or 5m (unknown unit "x" in duration "5x") (see 'volga help run')`},
		{"negative duration", []string{"run", "--sql", "q.sql", "--source", "tx=tx.csv", "--mode", "stream", "--max-out-of-order", "-1s"}, 2, `volga: run: invalid value "-1s" for flag --max-out-of-order: must not be negative (see 'volga help run')`},
		{"duration in batch mode", []string{"run", "--sql", "q.sql", "--source", "tx=tx.csv", "--max-out-of-order", "5s"}, 2, `volga: run: --max-out-of-order applies to --mode stream only`},
		{"watermark interval in batch mode", []string{"run", "--sql", "q.sql", "--source", "tx=tx.csv", "--watermark-interval", "100ms"}, 2, `volga: run: --watermark-interval applies to --mode stream only`},
		{"watermark max rows in batch mode", []string{"run", "--sql", "q.sql", "--source", "tx=tx.csv", "--watermark-max-rows", "100"}, 2, `volga: run: --watermark-max-rows applies to --mode stream only`},
		{"idle timeout in batch mode", []string{"run", "--sql", "q.sql", "--source", "tx=tx.csv", "--idle-timeout", "30s"}, 2, `volga: run: --idle-timeout applies to --mode stream only`},
		{"watermark max rows without interval", []string{"run", "--sql", "q.sql", "--source", "tx=tx.csv", "--mode", "stream", "--watermark-max-rows", "5"}, 2, `volga: run: --watermark-max-rows applies with --watermark-interval only`},
		{"serve watermark max rows without interval", []string{"serve", "--sql", "q.sql", "--source", "tx=tx.csv", "--listen", "127.0.0.1:0", "--mode", "stream", "--watermark-max-rows", "5"}, 2, `volga: serve: --watermark-max-rows applies with --watermark-interval only`},
		{"bad mode", []string{"run", "--sql", "q.sql", "--source", "tx=tx.csv", "--mode", "fast"}, 2, `volga: run: invalid value "fast" for flag --mode: want batch or stream (see 'volga help run')`},
		{"bad parallelism", []string{"run", "--sql", "q.sql", "--source", "tx=tx.csv", "--parallelism", "0"}, 2, `volga: run: --parallelism must be at least 1, got 0`},
		{"bad sink extension", []string{"run", "--sql", "q.sql", "--source", "tx=tx.csv", "--sink", "out.txt"}, 2, `volga: run: --sink out.txt: cannot tell the output format from its extension: use .csv, .jsonl, .ndjson or .parquet (.csv.gz, .jsonl.zst ... compressed), a directory ending in / for Parquet files per checkpoint, or a kafka:// URL`},
		{"unknown Kafka parameter", []string{"run", "--sql", "q.sql", "--source", "tx=kafka://127.0.0.1:1/t?start=last&bogus=1"}, 2, `volga: Kafka URL "kafka://127.0.0.1:1/t?start=last&bogus=1": unknown parameter "bogus"`},
		{"bad Kafka parameter", []string{"run", "--sql", "q.sql", "--source", "tx=kafka://127.0.0.1:1/t?start=middle"}, 2, `volga: Kafka URL "kafka://127.0.0.1:1/t?start=middle": parameter start="middle": want first or last`},
		{"Kafka URL without a broker", []string{"run", "--sql", "q.sql", "--source", "tx=kafka:///t"}, 2, `volga: bad Kafka URL "kafka:///t": want kafka://HOST:PORT[,HOST:PORT...]/TOPIC[?params]`},
		{"unknown Kafka sink parameter", []string{"run", "--sql", "q.sql", "--source", "tx=tx.csv", "--sink", "kafka://127.0.0.1:1/o?bogus=2"}, 2, `volga: Kafka URL "kafka://127.0.0.1:1/o?bogus=2": unknown sink parameter "bogus"`},
		{"unreadable query", []string{"run", "--sql", "missing.sql", "--source", "tx=tx.csv"}, 1, `volga: reading the query: open missing.sql: no such file or directory`},
		{"unreadable source", []string{"run", "--sql", "q.sql", "--source", "tx=missing.csv"}, 1, `volga: source: open missing.csv: no such file or directory`},
		{"unbound table", []string{"run", "--sql", "q.sql", "--source", "orders=tx.csv"}, 1, `volga: q.sql: the query reads table "tx", but no --source binds it (bound: orders=tx.csv); add --source tx=PATH`},
		{"extra source", []string{"run", "--sql", "q.sql", "--source", "tx=tx.csv", "--source", "users=tx.csv"}, 1, `volga: --source users=tx.csv: the query reads only table "tx"`},
		{"unknown column", []string{"run", "--sql", "badcol.sql", "--source", "tx=tx.csv"}, 1, `volga: badcol.sql:2:7: unknown column "amt" (table tx has user_id, ts, amount) (near "amt")`},
		{"bad sql", []string{"run", "--sql", "badsyntax.sql", "--source", "tx=tx.csv"}, 1, `volga: badsyntax.sql:4:`},
		{"empty query", []string{"run", "--sql", "empty.sql", "--source", "tx=tx.csv"}, 1, `volga: empty.sql: the query is empty`},
		{"help for unknown command", []string{"help", "deploy"}, 2, `volga: help: unknown command "deploy"; commands: run, serve, group, backfill, check, help, version`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := files(t, "q.sql", spendSQL, "tx.csv", txCSV, "badcol.sql", badColumn, "badsyntax.sql", badSyntax, "empty.sql", "\n")
			code, stdout, stderr := cli(t, context.Background(), dir, "", tc.args...)
			if code != tc.code {
				t.Errorf("exit %d, want %d", code, tc.code)
			}
			if stdout != "" {
				t.Errorf("stdout = %q, want nothing", stdout)
			}
			if strings.Count(stderr, "\n") != 1 || !strings.HasSuffix(stderr, "\n") {
				t.Errorf("stderr is not one line: %q", stderr)
			}
			if line := strings.TrimSuffix(stderr, "\n"); line != tc.want && !(strings.HasSuffix(tc.want, ":") && strings.HasPrefix(line, tc.want)) {
				t.Errorf("stderr:\n %s\nwant:\n %s", line, tc.want)
			}
			if _, err := os.Stat(filepath.Join(dir, "out.txt")); err == nil {
				t.Errorf("a failed run created its output file")
			}
		})
	}
}

// TestRunNoOutputFileOnQueryError checks that a query that does not compile
// leaves no empty output file behind.
func TestRunNoOutputFileOnQueryError(t *testing.T) {
	dir := files(t, "q.sql", "SELECT nope FROM tx", "tx.csv", txCSV)
	code, _, _ := cli(t, context.Background(), dir, "", "run", "--sql", "q.sql", "--source", "tx=tx.csv", "--sink", "out.csv")
	if code != 1 {
		t.Fatalf("exit %d, want 1", code)
	}
	if _, err := os.Stat(filepath.Join(dir, "out.csv")); !os.IsNotExist(err) {
		t.Errorf("out.csv exists after a query error (stat: %v)", err)
	}
}

// TestRunInterrupted checks that a cancelled context (SIGINT or SIGTERM in
// main) ends a batch run with status 130 and one line, and stops a
// streaming run gracefully: every row read emitted, one line, and exit
// 130 (the input was not read to its end).
func TestRunInterrupted(t *testing.T) {
	dir := files(t, "q.sql", equivSQL, "tx.csv", randomTx(2000))
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	code, _, stderr := cli(t, ctx, dir, "", "run", "--sql", "q.sql", "--source", "tx=tx.csv", "--batch-size", "10")
	if code != exitInterrupted || stderr != "volga: interrupted\n" {
		t.Errorf("batch: exit %d, stderr %q; want %d, %q", code, stderr, exitInterrupted, "volga: interrupted\n")
	}
	code, _, stderr = cli(t, ctx, dir, "", "run", "--sql", "q.sql", "--source", "tx=tx.csv", "--mode", "stream", "--batch-size", "10")
	if want := "volga: stopped by a signal; every row read was emitted\n"; code != exitInterrupted || stderr != want {
		t.Errorf("stream: exit %d, stderr %q; want %d, %q", code, stderr, exitInterrupted, want)
	}
}

func TestHelpAndVersion(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"help"}, "usage: volga <command> [arguments]"},
		{[]string{"--help"}, "usage: volga <command> [arguments]"},
		{[]string{"help", "run"}, "usage: volga " + runSynopsis},
		{[]string{"run", "--help"}, "-max-out-of-order DURATION"},
		{[]string{"help", "version"}, "usage: volga version"},
		{[]string{"version"}, "volga "},
	} {
		code, stdout, stderr := cli(t, context.Background(), t.TempDir(), "", tc.args...)
		if code != 0 || stderr != "" || !strings.Contains(stdout, tc.want) {
			t.Errorf("volga %s: exit %d, stderr %q, stdout:\n%s\nwant it to contain %q", strings.Join(tc.args, " "), code, stderr, stdout, tc.want)
		}
	}
}

// TestRunTimeOrder: --time-order lets a batch run over a CSV file promise
// how late its rows are: kept, the promise changes nothing in the output;
// broken (a row 2 s late against a promise of 1 s), the run stops with an
// error; and the flag is refused in stream mode.
func TestRunTimeOrder(t *testing.T) {
	in := "user_id,ts,amount\nu1,1000,1\nu2,3000,2\nu1,2500,4\nu2,7000,8\nu1,5000,16\nu1,9000,32\n"
	sql := `SELECT user_id, ts, sum(amount) OVER (PARTITION BY user_id ORDER BY ts
	        RANGE BETWEEN INTERVAL '3' SECOND PRECEDING AND CURRENT ROW) AS s3 FROM tx`
	dir := files(t, "q.sql", sql, "tx.csv", in)
	args := []string{"run", "--sql", "q.sql", "--source", "tx=tx.csv", "--batch-size", "1"}
	code, want, stderr := cli(t, context.Background(), dir, "", args...)
	if code != 0 {
		t.Fatalf("exit %d, stderr %q", code, stderr)
	}
	if want != "user_id,ts,s3\nu1,1000,1\nu2,3000,2\nu1,2500,5\nu2,7000,8\nu1,5000,20\nu1,9000,32\n" {
		t.Fatalf("stdout without --time-order:\n%s", want)
	}
	code, got, stderr := cli(t, context.Background(), dir, "", append(args, "--time-order", "2s")...)
	if code != 0 || got != want {
		t.Fatalf("--time-order 2s: exit %d, stderr %q, stdout:\n%s\nwant:\n%s", code, stderr, got, want)
	}
	code, _, stderr = cli(t, context.Background(), dir, "", append(args, "--time-order", "1s")...)
	if code == 0 || !strings.Contains(stderr, "below") || !strings.Contains(stderr, "(--time-order)") {
		t.Fatalf("--time-order 1s: exit %d, stderr %q; want a failure naming the broken promise", code, stderr)
	}
	code, _, stderr = cli(t, context.Background(), dir, "", append(args, "--mode", "stream", "--time-order", "1s")...)
	if code == 0 || !strings.Contains(stderr, "--time-order applies to --mode batch only") {
		t.Fatalf("stream mode: exit %d, stderr %q", code, stderr)
	}
}

// TestRunErrorOneLine: a run that fails prints its error as one line at
// the default log level (the pipeline's own record of the failure, with
// its counts, is logged from --log-level info down, before that line).
func TestRunErrorOneLine(t *testing.T) {
	in := "user_id,ts,amount\nu1,5000,1\nu1,1000,2\n"
	sql := `SELECT user_id, ts, sum(amount) OVER (PARTITION BY user_id ORDER BY ts
	        RANGE BETWEEN INTERVAL '3' SECOND PRECEDING AND CURRENT ROW) AS s3 FROM tx`
	dir := files(t, "q.sql", sql, "tx.csv", in)
	args := []string{"run", "--sql", "q.sql", "--source", "tx=tx.csv", "--time-order", "0s"}
	code, _, stderr := cli(t, context.Background(), dir, "", args...)
	lines := strings.Split(strings.TrimSpace(stderr), "\n")
	if code != 1 || len(lines) != 1 || !strings.HasPrefix(lines[0], "volga: ") || !strings.Contains(lines[0], "(--time-order)") {
		t.Fatalf("exit %d, stderr %q: want exit 1 and the error on one line", code, stderr)
	}
	code, _, stderr = cli(t, context.Background(), dir, "", append(args, "--log-level", "info")...)
	if code != 1 || !strings.Contains(stderr, "level=ERROR msg=\""+failedMessage+"\"") || !strings.Contains(stderr, "\n"+lines[0]+"\n") {
		t.Fatalf("--log-level info: exit %d, stderr %q: want the pipeline's record and then the error line", code, stderr)
	}
}

// TestRunClusterInput: --cluster-input orders an input in time order by
// user itself: the same rows as without it, user by user; it is refused in
// stream mode and beside --clustered-by.
func TestRunClusterInput(t *testing.T) {
	in := "user_id,ts,amount\nu2,1000,1\nu1,2000,2\nu2,2500,4\nu3,3000,8\nu1,4000,16\nu2,6000,32\n"
	sql := `SELECT user_id, ts, sum(amount) OVER (PARTITION BY user_id ORDER BY ts
	        RANGE BETWEEN INTERVAL '3' SECOND PRECEDING AND CURRENT ROW) AS s3 FROM tx`
	dir := files(t, "q.sql", sql, "tx.csv", in)
	args := []string{"run", "--sql", "q.sql", "--source", "tx=tx.csv", "--batch-size", "2"}
	code, got, stderr := cli(t, context.Background(), dir, "", args...)
	if want := "user_id,ts,s3\nu2,1000,1\nu1,2000,2\nu2,2500,5\nu3,3000,8\nu1,4000,18\nu2,6000,32\n"; code != 0 || got != want {
		t.Fatalf("exit %d, stderr %q, stdout:\n%s\nwant:\n%s", code, stderr, got, want)
	}
	code, got, stderr = cli(t, context.Background(), dir, "", append(args, "--cluster-input", "user_id")...)
	if want := "user_id,ts,s3\nu2,1000,1\nu2,2500,5\nu2,6000,32\nu1,2000,2\nu1,4000,18\nu3,3000,8\n"; code != 0 || got != want {
		t.Fatalf("--cluster-input user_id: exit %d, stderr %q, stdout:\n%s\nwant:\n%s", code, stderr, got, want)
	}
	for _, c := range []struct {
		extra []string
		want  string
	}{
		{[]string{"--mode", "stream", "--cluster-input", "user_id"}, "--cluster-input applies to --mode batch only"},
		{[]string{"--cluster-input", "user_id", "--clustered-by", "user_id"}, "give one"},
		{[]string{"--cluster-input", "nope"}, `no column "nope"`},
	} {
		code, _, stderr := cli(t, context.Background(), dir, "", append(args, c.extra...)...)
		if code == 0 || !strings.Contains(stderr, c.want) {
			t.Fatalf("%v: exit %d, stderr %q; want it to say %q", c.extra, code, stderr, c.want)
		}
	}
}

// TestRunClusteredBy: --clustered-by promises an input sorted by user; the
// output is that of a run without it; a user that comes back after
// another's rows stops the run with a message naming the promise; the
// flag is refused in stream mode.
func TestRunClusteredBy(t *testing.T) {
	in := "user_id,ts,amount\nu1,5000,1\nu1,1000,2\nu1,9000,4\nu2,3000,8\nu2,2500,16\nu3,7000,32\nu3,8000,64\n"
	sql := `SELECT user_id, ts, sum(amount) OVER (PARTITION BY user_id ORDER BY ts
	        RANGE BETWEEN INTERVAL '3' SECOND PRECEDING AND CURRENT ROW) AS s3 FROM tx`
	dir := files(t, "q.sql", sql, "tx.csv", in, "bad.csv", in+"u1,9500,128\n")
	args := []string{"run", "--sql", "q.sql", "--source", "tx=tx.csv", "--batch-size", "2"}
	code, want, stderr := cli(t, context.Background(), dir, "", args...)
	if code != 0 {
		t.Fatalf("exit %d, stderr %q", code, stderr)
	}
	if want != "user_id,ts,s3\nu1,5000,1\nu1,1000,2\nu1,9000,4\nu2,3000,24\nu2,2500,16\nu3,7000,32\nu3,8000,96\n" {
		t.Fatalf("stdout without --clustered-by:\n%s", want)
	}
	code, got, stderr := cli(t, context.Background(), dir, "", append(args, "--clustered-by", "user_id")...)
	if code != 0 || got != want {
		t.Fatalf("--clustered-by user_id: exit %d, stderr %q, stdout:\n%s\nwant:\n%s", code, stderr, got, want)
	}
	bad := []string{"run", "--sql", "q.sql", "--source", "tx=bad.csv", "--batch-size", "2", "--clustered-by", "user_id"}
	code, _, stderr = cli(t, context.Background(), dir, "", bad...)
	if code == 0 || !strings.Contains(stderr, "not clustered by [user_id] as promised") {
		t.Fatalf("a user coming back: exit %d, stderr %q; want a failure naming the broken promise", code, stderr)
	}
	code, _, stderr = cli(t, context.Background(), dir, "", append(args, "--mode", "stream", "--clustered-by", "user_id")...)
	if code == 0 || !strings.Contains(stderr, "--clustered-by applies to --mode batch only") {
		t.Fatalf("stream mode: exit %d, stderr %q", code, stderr)
	}
	// GROUP BY windows: by window start across users without the
	// promise, user by user with it.
	gdir := files(t, "g.sql", `SELECT user_id, window_start, sum(amount) AS s FROM tx GROUP BY user_id, tumble(ts, INTERVAL '5' SECOND)`, "tx.csv", in)
	gargs := []string{"run", "--sql", "g.sql", "--source", "tx=tx.csv", "--batch-size", "2"}
	for _, c := range []struct {
		extra []string
		want  string
	}{
		{nil, "user_id,window_start,s\nu1,0,2\nu2,0,24\nu1,5000,5\nu3,5000,96\n"},
		{[]string{"--clustered-by", "user_id"}, "user_id,window_start,s\nu1,0,2\nu1,5000,5\nu2,0,24\nu3,5000,96\n"},
	} {
		code, got, stderr := cli(t, context.Background(), gdir, "", append(gargs, c.extra...)...)
		if code != 0 || got != c.want {
			t.Fatalf("GROUP BY %v: exit %d, stderr %q, stdout:\n%s\nwant:\n%s", c.extra, code, stderr, got, c.want)
		}
	}
}
