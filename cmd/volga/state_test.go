package main

import (
	"context"
	"github.com/volga-go/volga/source"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestParseBytes(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want int64
	}{
		{"0", 0},
		{"1000000", 1_000_000},
		{"512MiB", 512 << 20},
		{"512mib", 512 << 20},
		{"2GB", 2_000_000_000},
		{"2 GiB", 2 << 30},
		{"1.5GiB", 3 << 29},
		{"64KiB", 64 << 10},
		{"10kB", 10_000},
		{"3TB", 3_000_000_000_000},
		{"1TiB", 1 << 40},
		{"100B", 100},
		{" 7 MB ", 7_000_000},
		{"0.5KiB", 512},
		{"8191TiB", 8191 << 40},
		{"256Mi", 256 << 20},
		{"1Mb", 1_000_000},
	} {
		got, err := parseBytes(tc.in)
		if err != nil || got != tc.want {
			t.Errorf("parseBytes(%q) = %d, %v; want %d", tc.in, got, err, tc.want)
		}
	}
	for _, tc := range []struct{ in, msg string }{
		{"", "want a size in bytes"},
		{"MiB", "want a size in bytes"},
		{"-5", "must not be negative"},
		{"-5MiB", "must not be negative"},
		{"5 parsecs", `unknown unit "parsecs"`},
		{"5M", `unknown unit "M"`},
		{"1.2.3GB", "want a size in bytes"},
		{".", "want a size in bytes"},
		{"9223372036854775808", "too large"},
		{"8388608TiB", "too large"},
		{"9e9TB", `unknown unit "e9TB"`},
		{"10000000.5TiB", "too large"},
	} {
		got, err := parseBytes(tc.in)
		if err == nil || !strings.Contains(err.Error(), tc.msg) {
			t.Errorf("parseBytes(%q) = %d, %v; want an error containing %q", tc.in, got, err, tc.msg)
		}
	}
	for _, n := range []int64{0, 1, 1000, 1 << 10, 3 << 20, 1<<30 + 1, 5 << 40} {
		var v int64
		f := bytesFlag{&v}
		if err := f.Set(bytesFlag{&n}.String()); err != nil || v != n {
			t.Errorf("%d: String %q parses back as %d, %v", n, bytesFlag{&n}.String(), v, err)
		}
	}
}

func TestBucketURL(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct{ in, want string }{
		{"file:///var/lib/volga/ckpt", "file:///var/lib/volga/ckpt?create_dir=true&no_tmp_dir=true"},
		{"file:///ckpt?no_tmp_dir=&create_dir=1", "file:///ckpt?create_dir=1&no_tmp_dir=true"},
		{"file://./ckpt", "file://./ckpt?create_dir=true&no_tmp_dir=true"},
		{dir + "/ckpt", "file://" + filepath.ToSlash(dir) + "/ckpt?create_dir=true&no_tmp_dir=true"},
		{"mem://", "mem://"},
		{"s3://bucket?endpoint=http://127.0.0.1:9000&use_path_style=true&region=us-east-1", "s3://bucket?endpoint=http://127.0.0.1:9000&use_path_style=true&region=us-east-1"},
	} {
		got, err := bucketURL(tc.in)
		if err != nil || got != tc.want {
			t.Errorf("bucketURL(%q) = %q, %v; want %q", tc.in, got, err, tc.want)
		}
	}
	t.Chdir(dir)
	if got, err := bucketURL("ckpt"); err != nil || got != "file://"+filepath.ToSlash(dir)+"/ckpt?create_dir=true&no_tmp_dir=true" {
		t.Errorf("bucketURL(relative) = %q, %v", got, err)
	}
	for _, tc := range []struct{ in, msg string }{
		{"gs://bucket", `unsupported scheme "gs"`},
		{"file://ckpt", "want a directory"},
		{"s3://?region=x", "want s3://BUCKET"},
		{"http://%zz", "not a URL"},
	} {
		if got, err := bucketURL(tc.in); err == nil || !strings.Contains(err.Error(), tc.msg) {
			t.Errorf("bucketURL(%q) = %q, %v; want an error containing %q", tc.in, got, err, tc.msg)
		}
	}
}

func TestStateFlagErrors(t *testing.T) {
	dir := files(t, "q.sql", spendSQL, "tx.csv", txCSV)
	if err := os.Mkdir(filepath.Join(dir, "full"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "full", "notes.txt"), []byte("mine"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, cmd := range []string{"run", "serve"} {
		base := []string{cmd, "--sql", "q.sql", "--source", "tx=tx.csv"}
		if cmd == "serve" {
			base = append(base, "--listen", "127.0.0.1:0")
		}
		for _, tc := range []struct {
			args []string
			want string // the whole line, without "volga: CMD: " and the newline
		}{
			{[]string{"--checkpoint-interval", "1s"}, "--checkpoint-interval applies with --checkpoints only"},
			{[]string{"--checkpoints", ""}, "--checkpoints needs a bucket URL, e.g. file:///var/lib/volga/ckpt"},
			{[]string{"--checkpoints", "gs://b"}, `--checkpoints gs://b: unsupported scheme "gs": use file:///DIR, s3://BUCKET?region=REGION or mem://`},
			{[]string{"--checkpoints", "file://ckpt"}, "--checkpoints file://ckpt: want a directory, e.g. file:///var/lib/volga/ckpt"},
			{[]string{"--checkpoints", "ckpt", "--checkpoint-interval", "0s"}, "--checkpoint-interval must be positive, got 0s"},
			{[]string{"--checkpoints", "ckpt", "--checkpoint-interval", "soon"}, `invalid value "soon" for flag --checkpoint-interval: want a duration such as 30s or 5m (invalid duration "soon") (see 'volga help ` + cmd + `')`},
			{[]string{"--memory-budget", "lots"}, `invalid value "lots" for flag --memory-budget: want a size in bytes such as 512MiB, 2GB or 1000000, got "lots" (see 'volga help ` + cmd + `')`},
			{[]string{"--memory-budget", "-1"}, `invalid value "-1" for flag --memory-budget: must not be negative (see 'volga help ` + cmd + `')`},
			{[]string{"--memory-budget", "1M"}, `invalid value "1M" for flag --memory-budget: unknown unit "M": use B, kB, MB, GB, TB, KiB, MiB, GiB or TiB (see 'volga help ` + cmd + `')`},
			{[]string{"--state-dir", "state"}, "--state-dir applies with --checkpoints, --memory-budget or --row-pages only"},
			{[]string{"--row-pages", "-5"}, "--row-pages must not be negative (0: no row paging), got -5"},
			{[]string{"--state-dir", "full", "--memory-budget", "64MiB"}, "--state-dir full: is not empty and holds no state store; the run empties it, so name a new or empty directory"},
			{[]string{"--state-dir", "tx.csv", "--checkpoints", "ckpt"}, "--state-dir tx.csv: not a directory"},
		} {
			args := append(append([]string{}, base...), tc.args...)
			// A mistake here would start a server: bound it.
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			code, stdout, stderr := cli(t, ctx, dir, "", args...)
			cancel()
			want := "volga: " + cmd + ": " + tc.want + "\n"
			if code != exitUsage || stdout != "" || stderr != want {
				t.Errorf("%s: exit %d, stderr %q; want %d, %q", strings.Join(args, " "), code, stderr, exitUsage, want)
			}
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "full", "notes.txt")); err != nil {
		t.Errorf("a refused --state-dir lost its files: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "ckpt")); !os.IsNotExist(err) {
		t.Errorf("a refused command line created the checkpoint directory (stat: %v)", err)
	}
}

// TestRunCheckpointsRestartAfterCompletion runs a bounded input to its end
// with checkpoints, then runs it again with the same bucket: the second
// run reads nothing and leaves every output as it was.
func TestRunCheckpointsRestartAfterCompletion(t *testing.T) {
	if testing.Short() {
		t.Skip("runs pipelines with checkpoints")
	}
	in := randomTx(3000)
	stopped := regexp.MustCompile(`msg="volga: pipeline stopped" .* rows_in=(\d+) rows_out=(\d+) `)
	for _, tc := range []struct {
		name string
		args []string
		out  string
	}{
		{"batch csv", []string{"--parallelism", "2"}, "out.csv"},
		{"stream jsonl", []string{"--mode", "stream", "--max-out-of-order", "1m", "--batch-size", "100"}, "out.jsonl"},
		{"stream parquet", []string{"--mode", "stream", "--parallelism", "2", "--batch-size", "500"}, "out.parquet"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := files(t, "q.sql", equivSQL, "tx.csv", in)
			plain := append([]string{"run", "--sql", "q.sql", "--source", "tx=tx.csv", "--sink", "want" + filepath.Ext(tc.out)}, tc.args...)
			if code, _, stderr := cli(t, context.Background(), dir, "", plain...); code != 0 || stderr != "" {
				t.Fatalf("run without checkpoints: exit %d, stderr %q", code, stderr)
			}
			want := readOutput(t, filepath.Join(dir, "want"+filepath.Ext(tc.out)))
			args := append([]string{"run", "--sql", "q.sql", "--source", "tx=tx.csv", "--sink", tc.out,
				"--checkpoints", "ckpt", "--checkpoint-interval", "50ms", "--state-dir", "state", "--log-level", "info"}, tc.args...)
			for i, resumed := range []bool{false, true, true} {
				code, stdout, stderr := cli(t, context.Background(), dir, "", args...)
				if code != 0 || stdout != "" {
					t.Fatalf("run %d: exit %d, stderr:\n%s", i+1, code, stderr)
				}
				if got := strings.Contains(stderr, `msg="volga: resuming from checkpoint"`); got != resumed {
					t.Errorf("run %d: resumed %v, want %v; stderr:\n%s", i+1, got, resumed, stderr)
				}
				if strings.Contains(stderr, "level=WARN") || strings.Contains(stderr, "level=ERROR") {
					t.Errorf("run %d logged a warning or error:\n%s", i+1, stderr)
				}
				m := stopped.FindStringSubmatch(stderr)
				wantIn := "3000"
				if resumed {
					wantIn = "0"
				}
				if m == nil || m[1] != wantIn || m[2] != wantIn {
					t.Errorf("run %d: want %s rows in and out; stderr:\n%s", i+1, wantIn, stderr)
				}
				if got := readOutput(t, filepath.Join(dir, tc.out)); got != want {
					t.Fatalf("run %d: output differs from the run without checkpoints:\n%s", i+1, describeDiff(got, want))
				}
			}
			if _, err := os.Stat(filepath.Join(dir, "state")); err != nil {
				t.Errorf("--state-dir: %v", err)
			}
			// Another parallelism cannot resume these checkpoints: the run
			// fails and leaves the output alone.
			other := append(slices.Clone(args), "--parallelism", "3")
			code, _, stderr := cli(t, context.Background(), dir, "", other...)
			if code != exitFailure || !strings.Contains(stderr, "volga: ") || !strings.Contains(stderr, "checkpoint") {
				t.Errorf("resuming with another parallelism: exit %d, stderr:\n%s", code, stderr)
			}
			if got := readOutput(t, filepath.Join(dir, tc.out)); got != want {
				t.Errorf("a run that could not resume changed the output:\n%s", describeDiff(got, want))
			}
		})
	}
}

// TestServeCheckpointsRestart ingests with checkpoints, stops the server,
// and starts it again: it serves the same features without reading the
// input again.
func TestServeCheckpointsRestart(t *testing.T) {
	if testing.Short() {
		t.Skip("runs pipelines with checkpoints")
	}
	dir := files(t, "q.sql", spendSQL, "tx.csv", txCSV)
	args := []string{"--sql", "q.sql", "--source", "tx=tx.csv", "--parallelism", "2", "--checkpoints", filepath.Join(dir, "ckpt")}
	body := `[{"key": {"user_id": "u1"}, "at": "2024-01-01T02:00:00Z"}, {"key": {"user_id": "u2"}, "at": "2024-01-01T01:30:00Z"}]`
	var first string
	for i, ingested := range []string{"6", "0"} {
		url, stderr, stop := startServe(t, dir, args...)
		status, got := postJSON(t, url+"/v1/features", body)
		if status != 200 {
			t.Fatalf("serve %d: status %d: %s", i+1, status, got)
		}
		if i == 0 {
			first = got
			if !strings.Contains(got, `"spend_1h":4.5`) {
				t.Errorf("serve %d: %s", i+1, got)
			}
		} else if got != first {
			t.Errorf("serve %d answers\n%s\nwant\n%s", i+1, got, first)
		}
		if code := stop(); code != exitOK {
			t.Errorf("serve %d: exit %d", i+1, code)
		}
		if !strings.Contains(stderr.String(), "volga: ingested "+ingested+" rows, serving on ") {
			t.Errorf("serve %d: stderr:\n%s", i+1, stderr)
		}
	}
}

// TestMemoryBudget runs with a memory budget far below the window state:
// keys go to the store on disk and come back, and neither the output nor
// the lookups of serve change.
func TestMemoryBudget(t *testing.T) {
	if testing.Short() {
		t.Skip("runs pipelines with a state store")
	}
	dir := files(t, "q.sql", equivSQL, "tx.csv", randomTx(3000), "spend.sql", spendSQL, "small.csv", txCSV)
	base := []string{"run", "--sql", "q.sql", "--source", "tx=tx.csv", "--parallelism", "2"}
	code, want, stderr := cli(t, context.Background(), dir, "", base...)
	if code != 0 || stderr != "" {
		t.Fatalf("exit %d, stderr %q", code, stderr)
	}
	for _, extra := range [][]string{
		{"--memory-budget", "4KiB"},
		{"--memory-budget", "4KiB", "--state-dir", "state", "--mode", "stream", "--batch-size", "50"},
		{"--memory-budget", "16KiB", "--checkpoints", "ckpt", "--checkpoint-interval", "20ms", "--batch-size", "100"},
		{"--row-pages", "8", "--mode", "stream", "--batch-size", "50"},
		{"--row-pages", "8", "--memory-budget", "4KiB", "--checkpoints", "ckpt2", "--checkpoint-interval", "50ms", "--mode", "stream", "--batch-size", "50"},
	} {
		code, got, stderr := cli(t, context.Background(), dir, "", append(slices.Clone(base), extra...)...)
		if code != 0 || stderr != "" {
			t.Fatalf("%v: exit %d, stderr %q", extra, code, stderr)
		}
		if got != want {
			t.Errorf("%v: output differs from the run with all state in memory:\n%s", extra, firstDiff(got, want))
		}
	}

	body := `[{"key": {"user_id": "u1"}, "at": "2024-01-01T02:00:00Z"}, {"key": {"user_id": "u2"}, "at": "2024-01-01T01:30:00Z"}, {"key": {"user_id": "u1"}, "at": "2024-01-01T02:30:00Z"}]`
	var answers []string
	for _, extra := range [][]string{nil, {"--memory-budget", "1KiB"}} {
		url, stderr, stop := startServe(t, dir, append([]string{"--sql", "spend.sql", "--source", "tx=small.csv"}, extra...)...)
		status, got := postJSON(t, url+"/v1/features", body)
		if status != 200 {
			t.Fatalf("serve %v: status %d: %s", extra, status, got)
		}
		answers = append(answers, got)
		if code := stop(); code != exitOK {
			t.Errorf("serve %v: exit %d; stderr:\n%s", extra, code, stderr)
		}
	}
	if answers[0] != answers[1] {
		t.Errorf("serve with a memory budget answers\n%s\nwant\n%s", answers[1], answers[0])
	}
}

// TestRunInterruptedResumes interrupts a run with checkpoints (as SIGINT
// does) once it has written one: it stops gracefully with a final
// checkpoint and exits 130; started again it resumes, and the output equals
// that of a run without interruption.
func TestRunInterruptedResumes(t *testing.T) {
	if testing.Short() {
		t.Skip("runs pipelines with checkpoints")
	}
	// Every 97th row arrives 30 rows (about half an hour) late: late rows
	// in stream mode.
	lines := strings.SplitAfter(randomTx(6000), "\n")
	for i := 97; i+30 < len(lines)-1; i += 97 {
		row := lines[i]
		copy(lines[i:i+30], lines[i+1:i+31])
		lines[i+30] = row
	}
	dir := files(t, "q.sql", equivSQL, "tx.csv", strings.Join(lines, ""))
	for _, mode := range []string{"stream", "batch"} {
		t.Run(mode, func(t *testing.T) {
			base := []string{"run", "--sql", "q.sql", "--source", "tx=tx.csv", "--mode", mode, "--batch-size", "100", "--parallelism", "2"}
			late := func(name string) []string { return nil }
			if mode == "stream" {
				// Late rows too: the late-row file takes part in the
				// checkpoints like the output.
				base = append(base, "--max-out-of-order", "2m")
				late = func(name string) []string { return []string{"--late-sink", name} }
			}
			code, _, stderr := cli(t, context.Background(), dir, "", slices.Concat(base, []string{"--sink", mode + "-want.csv"}, late(mode+"-late-want.csv"))...)
			if code != 0 || (stderr != "") != (mode == "stream") {
				t.Fatalf("exit %d, stderr %q", code, stderr)
			}
			want := readFile(t, filepath.Join(dir, mode+"-want.csv"))
			args := slices.Concat(base, []string{"--sink", mode + ".csv", "--checkpoints", mode + "-ckpt", "--checkpoint-interval", "10ms", "--log-level", "info"}, late(mode+"-late.csv"))

			// The child type of the crash test signals checkpoints in the log.
			w := &child{written: make(chan struct{}, 1024)}
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			go func() {
				<-w.written
				cancel()
			}()
			t.Chdir(dir)
			code = run(ctx, args, strings.NewReader(""), io.Discard, w)
			log := w.output()
			// A run with checkpoints stops gracefully on a signal: a final
			// checkpoint, and exit 130, since the input was not read to its
			// end (0 when the run ended before the signal).
			stopped := strings.Contains(log, "stopped by a signal after a final checkpoint")
			if stopped && code != exitInterrupted || !stopped && code != exitOK {
				t.Fatalf("exit %d, stderr:\n%s", code, log)
			}
			if !stopped {
				t.Logf("the run ended before it was interrupted: nothing to resume; stderr:\n%s", log)
			}
			code, _, stderr = cli(t, context.Background(), dir, "", args...)
			if code != 0 {
				t.Fatalf("the run after the interrupt: exit %d, stderr:\n%s", code, stderr)
			}
			if resumedEpoch(stderr) == 0 {
				t.Errorf("the run after the interrupt did not resume from a checkpoint; stderr:\n%s", stderr)
			}
			if got := readFile(t, filepath.Join(dir, mode+".csv")); got != want {
				t.Errorf("output after the interrupt and the restart:\n%s", describeDiff(got, want))
			}
			if mode == "stream" {
				// Late rows of the two tasks come in no set order.
				sorted := func(name string) string {
					lines := strings.SplitAfter(readFile(t, filepath.Join(dir, name)), "\n")
					slices.Sort(lines)
					return strings.Join(lines, "")
				}
				want := sorted(mode + "-late-want.csv")
				if n := strings.Count(want, "\n"); n < 10 {
					t.Fatalf("%d late rows (with the header): too few for the test to tell", n)
				}
				if got := sorted(mode + "-late.csv"); got != want {
					t.Errorf("late rows after the interrupt and the restart:\n%s", describeDiff(got, want))
				}
			}
		})
	}
}

// TestRunParquetDirectorySink: --sink DIR/ with --checkpoints writes one
// Parquet file per checkpoint epoch, which --source DIR reads back in
// order: the same rows as a CSV run.
func TestRunParquetDirectorySink(t *testing.T) {
	dir := files(t, "q.sql", equivSQL, "tx.csv", randomTx(3000))
	base := []string{"run", "--sql", "q.sql", "--source", "tx=tx.csv", "--mode", "stream", "--batch-size", "100"}
	if code, _, stderr := cli(t, context.Background(), dir, "", append(slices.Clone(base), "--sink", "want.csv")...); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	args := append(slices.Clone(base), "--sink", "out/", "--checkpoints", "ckpt", "--checkpoint-interval", "5ms")
	if code, _, stderr := cli(t, context.Background(), dir, "", args...); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	parts, _ := filepath.Glob(filepath.Join(dir, "out", "part-*.parquet"))
	if len(parts) == 0 {
		t.Fatal("no part files in out/")
	}
	// Read the directory back, files in name (epoch) order: the rows of
	// the CSV run, in the same order (compared by their first column).
	src, err := source.Open(filepath.Join(dir, "out"))
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	var got []string
	for {
		rec, err := src.Read(context.Background())
		if err != nil {
			break
		}
		col := rec.Column(0)
		for i := 0; i < col.Len(); i++ {
			got = append(got, col.ValueStr(i))
		}
		rec.Release()
	}
	var want []string
	for _, line := range strings.Split(strings.TrimSpace(readFile(t, filepath.Join(dir, "want.csv"))), "\n")[1:] {
		want = append(want, strings.SplitN(line, ",", 2)[0])
	}
	if !slices.Equal(got, want) {
		t.Fatalf("out/ (%d files) holds %d rows, want.csv %d, or their order differs", len(parts), len(got), len(want))
	}
}
