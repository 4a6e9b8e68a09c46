package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	"github.com/johannesboyne/gofakes3"
	"github.com/johannesboyne/gofakes3/backend/s3mem"

	"github.com/volga-go/volga/sink"
)

// The crash tests run the volga binary with checkpoints, kill it with
// SIGKILL at random moments, start it again each time with the same
// bucket, and let the last start run to its end: the output file must
// equal, row for row, that of a run without checkpoints.

// crashSQL mixes frames: RANGE 1 h (retractable aggregates on tiles, a
// frequency aggregate), ROWS (min and max over raw rows), RANGE 1 day
// (count_distinct) and RANGE 6 h excluding the row.
const crashSQL = `SELECT user_id, ts, amount,
  sum(amount) OVER h AS spend_1h,
  count(*) OVER h AS n_1h,
  avg(amount) OVER h AS avg_1h,
  topn_frequency(merchant, 2) OVER h AS top_merchants_1h,
  min(amount) OVER (PARTITION BY user_id ORDER BY ts ROWS BETWEEN 5 PRECEDING AND CURRENT ROW) AS min_6,
  max(amount) OVER (PARTITION BY user_id ORDER BY ts ROWS BETWEEN 5 PRECEDING AND CURRENT ROW) AS max_6,
  count_distinct(merchant) OVER (PARTITION BY user_id ORDER BY ts RANGE BETWEEN INTERVAL '1' DAY PRECEDING AND CURRENT ROW) AS merchants_1d,
  max(amount) OVER (PARTITION BY user_id ORDER BY ts RANGE BETWEEN INTERVAL '6' HOUR PRECEDING AND CURRENT ROW EXCLUDE CURRENT ROW) AS max_prev_6h
FROM tx
WINDOW h AS (PARTITION BY user_id ORDER BY ts RANGE BETWEEN INTERVAL '1' HOUR PRECEDING AND CURRENT ROW)
`

// crashRows is the size of the input of streams (batch runs get four
// times as many), crashBatch the rows per source
// batch (small: the source position of a checkpoint falls anywhere).
const (
	crashRows  = 60_000
	crashBatch = 128
)

// crashInput is a transaction log of n rows over 50 users and 20
// merchants, amounts in cents (not exact in binary: float sums would
// show a change of order), event times (epoch ms) up to 30 s out of order,
// which --max-out-of-order 1m accepts: no row is late.
func crashInput(n int) string {
	r := rand.New(rand.NewPCG(2026, 11))
	var b strings.Builder
	b.Grow(n * 40)
	b.WriteString("user_id,ts,amount,merchant\n")
	base := int64(1_704_067_200_000)
	for range n {
		base += r.Int64N(4000)
		fmt.Fprintf(&b, "u%d,%d,%d.%02d,m%d\n", r.IntN(50), base+r.Int64N(30_000), r.IntN(1000), r.IntN(100), r.IntN(20))
	}
	return b.String()
}

// buildVolga builds the command into a temporary directory.
func buildVolga(t *testing.T) string {
	t.Helper()
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go tool to build the binary with")
	}
	bin := filepath.Join(t.TempDir(), "volga")
	if runtime.GOOS == "windows" {
		bin += ".exe"
	}
	if out, err := exec.Command(goTool, "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// killSeed returns the seed of the kill delays: VOLGA_SEED when set (to
// replay a failure), otherwise a new one. Either way it is logged.
func killSeed(t *testing.T) uint64 {
	seed := uint64(time.Now().UnixNano())
	if s := os.Getenv("VOLGA_SEED"); s != "" {
		v, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			t.Fatalf("VOLGA_SEED=%q: %v", s, err)
		}
		seed = v
	}
	t.Logf("kill delays from seed %d (VOLGA_SEED=%d replays them)", seed, seed)
	return seed
}

// child is one start of the binary. Its standard error is kept, and each
// log line saying a checkpoint was written is signalled on written.
type child struct {
	cmd     *exec.Cmd
	done    chan error
	start   time.Time
	written chan struct{}

	mu      sync.Mutex
	stderr  bytes.Buffer
	partial []byte
}

var writtenLine = []byte(`msg="statestore: checkpoint written"`)

func (c *child) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.stderr.Write(p)
	c.partial = append(c.partial, p...)
	for {
		i := bytes.IndexByte(c.partial, '\n')
		if i < 0 {
			break
		}
		if bytes.Contains(c.partial[:i], writtenLine) {
			select {
			case c.written <- struct{}{}:
			default:
			}
		}
		c.partial = c.partial[i+1:]
	}
	return len(p), nil
}

func (c *child) output() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.stderr.String()
}

func startChild(t *testing.T, bin, dir string, env []string, args ...string) *child {
	t.Helper()
	c := &child{cmd: exec.Command(bin, args...), done: make(chan error, 1), written: make(chan struct{}, 256)}
	c.cmd.Dir = dir
	c.cmd.Env = env
	c.cmd.Stdout = io.Discard
	c.cmd.Stderr = c
	c.start = time.Now()
	if err := c.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { c.done <- c.cmd.Wait() }()
	return c
}

// wait waits for the child to exit, at most limit, and returns its exit
// status.
func (c *child) wait(t *testing.T, limit time.Duration) int {
	t.Helper()
	select {
	case err := <-c.done:
		return exitStatus(t, err)
	case <-time.After(limit):
		_ = c.cmd.Process.Kill()
		<-c.done
		t.Fatalf("volga did not finish within %s; stderr:\n%s", limit, c.output())
		return -1
	}
}

func exitStatus(t *testing.T, err error) int {
	var ee *exec.ExitError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &ee):
		return ee.ExitCode()
	}
	t.Fatal(err)
	return -1
}

var (
	resumedRE = regexp.MustCompile(`msg="volga: resuming from checkpoint" pipeline=\S+ epoch=(\d+)`)
	stoppedRE = regexp.MustCompile(`msg="volga: pipeline stopped" .* rows_in=(\d+) rows_out=(\d+) `)
)

// resumedEpoch returns the epoch a start resumed from, 0 for none.
func resumedEpoch(stderr string) uint64 {
	m := resumedRE.FindStringSubmatch(stderr)
	if m == nil {
		return 0
	}
	e, _ := strconv.ParseUint(m[1], 10, 64)
	return e
}

// crashCase is one configuration of the crash test.
type crashCase struct {
	name  string
	args  []string // mode, parallelism
	out   string   // the output file: .csv (compared byte for byte) or .parquet (row for row)
	kills int
	s3    bool // checkpoints on a fake S3 server, not in a directory
}

// bucket is where a crash case keeps its checkpoints.
type bucket struct {
	url string
	env []string // for the child
}

// reference is the output of a run without checkpoints and the processor
// time it took (user and system: unlike the elapsed time, it hardly
// depends on what else the machine runs).
type reference struct {
	out string
	cpu time.Duration
}

// TestCrashRecovery kills volga run with SIGKILL at random moments, ten
// times (four on S3), each start resuming from the latest checkpoint, and
// checks that the output of each start that reaches the end equals that
// of a run without checkpoints; then that a start after the end reads
// nothing and leaves the output as it is.
func TestCrashRecovery(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary and runs it for a while")
	}
	bin := buildVolga(t)
	seed := killSeed(t)
	// A batch run reads its input several times faster than a stream
	// (no watermark after every batch): it gets four times the rows, so
	// that a start reads a small part of it before its first checkpoint.
	inputs := map[string]string{
		"stream": files(t, "q.sql", crashSQL, "tx.csv", crashInput(crashRows)),
		"batch":  files(t, "q.sql", crashSQL, "tx.csv", crashInput(4*crashRows)),
	}
	rowsOf := map[string]int{"stream": crashRows, "batch": 4 * crashRows}
	stream := []string{"--mode", "stream", "--max-out-of-order", "1m"}
	batch := []string{"--mode", "batch"}
	cases := []crashCase{
		{"stream-p1-csv", append(slices.Clone(stream), "--parallelism", "1"), "out.csv", 10, false},
		{"stream-p2-csv", append(slices.Clone(stream), "--parallelism", "2"), "out.csv", 10, false},
		{"batch-p1-csv", append(slices.Clone(batch), "--parallelism", "1"), "out.csv", 10, false},
		{"batch-p2-parquet", append(slices.Clone(batch), "--parallelism", "2"), "out.parquet", 10, false},
		{"s3-stream-p2-csv", append(slices.Clone(stream), "--parallelism", "2"), "out.csv", 4, true},
	}
	// The references, by mode and output format: parallelism changes
	// nothing in the output (TestRunEquivalence).
	refs := map[string]reference{}
	for _, tc := range cases {
		key := tc.args[1] + filepath.Ext(tc.out)
		if _, ok := refs[key]; ok {
			continue
		}
		dir := caseDir(t, inputs[tc.args[1]])
		out := "ref" + filepath.Ext(tc.out)
		c := startChild(t, bin, dir, os.Environ(), crashArgs(tc, out)...)
		if code := c.wait(t, 3*time.Minute); code != 0 {
			t.Fatalf("%s without checkpoints: exit %d, stderr:\n%s", key, code, c.output())
		}
		ps := c.cmd.ProcessState
		ref := reference{out: readOutput(t, filepath.Join(dir, out)), cpu: ps.UserTime() + ps.SystemTime()}
		if got, want := strings.Count(ref.out, "\n"), rowsOf[tc.args[1]]+1; got != want {
			t.Fatalf("%s without checkpoints wrote %d lines, want %d", key, got, want)
		}
		refs[key] = ref
	}
	for i, tc := range cases {
		ref := refs[tc.args[1]+filepath.Ext(tc.out)]
		rng := rand.New(rand.NewPCG(seed, uint64(i)))
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel() // the children wait on their disk more than they compute
			var ck string
			newBucket := func() bucket {
				if tc.s3 {
					return fakeS3(t, "ckpt")
				}
				ck = filepath.Join(t.TempDir(), "ckpt")
				return bucket{url: "file://" + filepath.ToSlash(ck), env: os.Environ()}
			}
			runCrashCase(t, bin, caseDir(t, inputs[tc.args[1]]), rng, tc, newBucket, ref)
			if ck != "" && countManifests(t, ck) == 0 {
				t.Errorf("no complete checkpoint in %s", ck)
			}
		})
	}
}

// caseDir returns a new directory holding the query and the input.
func caseDir(t *testing.T, input string) string {
	t.Helper()
	dir := t.TempDir()
	for _, f := range []string{"q.sql", "tx.csv"} {
		if err := os.Symlink(filepath.Join(input, f), filepath.Join(dir, f)); err != nil {
			if err := os.WriteFile(filepath.Join(dir, f), []byte(readFile(t, filepath.Join(input, f))), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	return dir
}

// crashArgs is the command line of a case, writing to out.
func crashArgs(tc crashCase, out string, extra ...string) []string {
	args := []string{"run", "--sql", "q.sql", "--source", "tx=tx.csv", "--batch-size", strconv.Itoa(crashBatch), "--sink", out}
	return append(append(args, tc.args...), extra...)
}

// A kill plan says when a start is killed: after a random delay from its
// start (before its first checkpoint is written, most likely: while it
// starts, restores, reads), or once it has written its first checkpoint,
// after a random delay below two checkpoint intervals (while it publishes
// the output of that checkpoint, reads on, or takes the next one).
type killPlan struct {
	afterCheckpoint bool
	delay           time.Duration // from the start or the checkpoint
}

// killPlans returns the plans of n kills in a random order, a quarter of
// them early: below early after the start.
func killPlans(rng *rand.Rand, n int, interval, early time.Duration) []killPlan {
	plans := make([]killPlan, n)
	for i := range plans {
		if i < (n+3)/4 {
			plans[i] = killPlan{false, 20*time.Millisecond + time.Duration(rng.Int64N(int64(early)))}
		} else {
			plans[i] = killPlan{true, time.Duration(rng.Int64N(int64(2 * interval)))}
		}
	}
	rng.Shuffle(n, func(i, j int) { plans[i], plans[j] = plans[j], plans[i] })
	return plans
}

func (p killPlan) String() string {
	if !p.afterCheckpoint {
		return fmt.Sprintf("%s after the start", p.delay.Round(time.Millisecond))
	}
	return fmt.Sprintf("%s after its first checkpoint", p.delay.Round(time.Millisecond))
}

// runCrashCase runs one case: the kills, the run to the end and a run
// after the end.
//
// How far a start gets before it is killed depends on the machine and on
// what else it runs: a start may read the rest of the input and end on
// its own before all kills are done. Its output must then equal the
// reference like that of the last start, and the kills left begin again
// from nothing, with new checkpoints (newBucket) and no output file.
func runCrashCase(t *testing.T, bin, dir string, rng *rand.Rand, tc crashCase, newBucket func() bucket, ref reference) {
	b := newBucket()
	tmp := "TMPDIR=" + t.TempDir()
	env := append(slices.Clone(b.env), tmp)
	// A start killed after its first checkpoint has saved the progress
	// of about one interval (the reader runs on while a checkpoint is
	// uploaded, but what it reads then is saved only by the next one). An
	// interval of a thirtieth of the processor time of a run without
	// checkpoints keeps ten starts well short of the end of the input,
	// whatever the speed of the machine.
	interval := min(max(ref.cpu/30, 10*time.Millisecond), 200*time.Millisecond).Round(time.Millisecond)
	// An early kill comes within an eighth of that time (at most 420 ms):
	// on a fast machine a start left 420 ms could read the rest of the
	// input and end on its own.
	early := min(max(ref.cpu/8, 10*time.Millisecond), 400*time.Millisecond)
	argsFor := func(b bucket) []string {
		return crashArgs(tc, tc.out, "--checkpoints", b.url, "--checkpoint-interval", interval.String(),
			"--state-dir", "state", "--log-level", "info")
	}
	args := argsFor(b)
	var (
		resumed, advanced int
		last              uint64
		lives             []string
		rounds            = 1
	)
	plans := killPlans(rng, tc.kills, interval, early)
	for i := 0; i < len(plans); i++ {
		plan := plans[i]
		c := startChild(t, bin, dir, env, args...)
		deadline := time.After(time.Minute)
		var exited error
		ended := false
		if plan.afterCheckpoint {
			select {
			case <-c.written:
			case exited = <-c.done:
				ended = true
			case <-deadline:
				_ = c.cmd.Process.Kill()
				<-c.done
				t.Fatalf("start %d wrote no checkpoint within a minute; stderr:\n%s", i+1, c.output())
			}
		}
		if !ended {
			select {
			case exited = <-c.done:
				ended = true
			case <-time.After(plan.delay):
			}
		}
		if !ended {
			if err := c.cmd.Process.Kill(); err != nil && !errors.Is(err, os.ErrProcessDone) {
				t.Fatal(err)
			}
			err := <-c.done
			var ee *exec.ExitError
			if !errors.As(err, &ee) || ee.Exited() {
				// It exited (its output complete) before the kill
				// reached it.
				exited, ended = err, true
			}
		}
		stderr := c.output()
		if ended {
			// The start read the rest of the input before its kill.
			code := exitStatus(t, exited)
			if code != 0 {
				t.Fatalf("start %d (to be killed %s) ended on its own with exit %d; starts so far:\n%s\nstderr:\n%s",
					i+1, plan, code, strings.Join(lives, "\n"), stderr)
			}
			if got := readOutput(t, filepath.Join(dir, tc.out)); got != ref.out {
				t.Fatalf("start %d ended on its own after %d kills; its output differs from the run without checkpoints:\n%s\nstarts so far:\n%s",
					i+1, i, describeDiff(got, ref.out), strings.Join(lives, "\n"))
			}
			epoch := resumedEpoch(stderr)
			if epoch > 0 {
				resumed++
				if epoch > last {
					advanced++
				}
			}
			lives = append(lives, fmt.Sprintf("start %d: resumed from epoch %d, not killed (%s): ran to the end in %s, output as the reference's; the kills left begin again with new checkpoints",
				i+1, epoch, plan, time.Since(c.start).Round(time.Millisecond)))
			if rounds == 4 {
				t.Fatalf("three starts read the rest of the input before their kill: the input is too small for this machine; starts:\n%s",
					strings.Join(lives, "\n"))
			}
			// The kill is made up for by a later start.
			plans = append(plans, killPlan{true, time.Duration(rng.Int64N(int64(2 * interval)))})
			b = newBucket()
			env = append(slices.Clone(b.env), tmp)
			args = argsFor(b)
			last = 0
			rounds++
			for _, f := range []string{tc.out, "state"} {
				if err := os.RemoveAll(filepath.Join(dir, f)); err != nil {
					t.Fatal(err)
				}
			}
			continue
		}
		epoch := resumedEpoch(stderr)
		from := "started afresh"
		switch {
		case epoch > 0:
			from = fmt.Sprintf("resumed from epoch %d", epoch)
		case !strings.Contains(stderr, `msg="volga: pipeline started"`):
			from = "killed before it started"
		}
		lives = append(lives, fmt.Sprintf("start %d: %s, killed %s (%s after the start)",
			i+1, from, plan, time.Since(c.start).Round(time.Millisecond)))
		if strings.Contains(stderr, "checkpoint failed") {
			t.Errorf("start %d: a checkpoint failed:\n%s", i+1, stderr)
		}
		if epoch > 0 {
			resumed++
			if epoch > last {
				advanced++
			}
			last = epoch
		}
	}

	// The last start runs to the end.
	c := startChild(t, bin, dir, env, args...)
	code := c.wait(t, 3*time.Minute)
	stderr := c.output()
	epoch := resumedEpoch(stderr)
	lives = append(lives, fmt.Sprintf("start %d: resumed from epoch %d, ran to the end in %s, exit %d",
		len(lives)+1, epoch, time.Since(c.start).Round(time.Millisecond), code))
	t.Logf("volga %s\n(the run without checkpoints took %s of processor time; %d round(s) of kills)\n%s", strings.Join(args, " "),
		ref.cpu.Round(time.Millisecond), rounds, strings.Join(lives, "\n"))
	if code != 0 {
		t.Fatalf("the last start: exit %d, stderr:\n%s", code, stderr)
	}
	if epoch > 0 {
		resumed++
		if epoch > last {
			advanced++
		}
	}
	// Kills came after checkpoints had been written: the next start
	// resumed from them, and from newer ones as the kills went on.
	if want := tc.kills / 2; resumed < want || advanced < want {
		t.Errorf("%d of %d starts resumed from a checkpoint, %d from a newer one than the start before; want at least %d of each",
			resumed, len(lives), advanced, want)
	}
	if got := readOutput(t, filepath.Join(dir, tc.out)); got != ref.out {
		t.Fatalf("after %d kills the output differs from the run without checkpoints:\n%s", tc.kills, describeDiff(got, ref.out))
	}

	// A start after the end reads nothing and changes nothing.
	c = startChild(t, bin, dir, env, args...)
	if code := c.wait(t, time.Minute); code != 0 {
		t.Fatalf("start after the end: exit %d, stderr:\n%s", code, c.output())
	}
	stderr = c.output()
	if m := stoppedRE.FindStringSubmatch(stderr); m == nil || m[1] != "0" || m[2] != "0" || resumedEpoch(stderr) == 0 {
		t.Errorf("start after the end: want it to resume and read nothing; stderr:\n%s", stderr)
	}
	if got := readOutput(t, filepath.Join(dir, tc.out)); got != ref.out {
		t.Fatalf("a start after the end changed the output:\n%s", describeDiff(got, ref.out))
	}
}

// readOutput returns an output file as text: a CSV file as it is, a
// Parquet file as CSV lines rendered the way the CSV sink renders values.
func readOutput(t *testing.T, path string) string {
	t.Helper()
	if filepath.Ext(path) != ".parquet" {
		return readFile(t, path)
	}
	pf, err := file.OpenParquetFile(path, false)
	if err != nil {
		t.Fatal(err)
	}
	defer pf.Close()
	fr, err := pqarrow.NewFileReader(pf, pqarrow.ArrowReadProperties{BatchSize: 4096}, memory.DefaultAllocator)
	if err != nil {
		t.Fatal(err)
	}
	tbl, err := fr.ReadTable(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer tbl.Release()
	var b strings.Builder
	for i, f := range tbl.Schema().Fields() {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(f.Name)
	}
	b.WriteByte('\n')
	tr := array.NewTableReader(tbl, 4096)
	defer tr.Release()
	for tr.Next() {
		rec := tr.RecordBatch()
		for r := range int(rec.NumRows()) {
			for c := range int(rec.NumCols()) {
				if c > 0 {
					b.WriteByte(',')
				}
				b.WriteString(strconv.Quote(sink.FormatValue(rec.Column(c), r)))
			}
			b.WriteByte('\n')
		}
	}
	return b.String()
}

// describeDiff says how two outputs differ: line counts, rows written
// twice or missing, the first differing line.
func describeDiff(got, want string) string {
	g, w := strings.Split(got, "\n"), strings.Split(want, "\n")
	count := func(lines []string) map[string]int {
		m := make(map[string]int, len(lines))
		for _, l := range lines {
			m[l]++
		}
		return m
	}
	gc, wc := count(g), count(w)
	var extra, missing int
	var exampleExtra, exampleMissing string
	for l, n := range gc {
		if n > wc[l] {
			extra += n - wc[l]
			if exampleExtra == "" {
				exampleExtra = l
			}
		}
	}
	for l, n := range wc {
		if n > gc[l] {
			missing += n - gc[l]
			if exampleMissing == "" {
				exampleMissing = l
			}
		}
	}
	return fmt.Sprintf("%d lines, want %d; %d rows too many (e.g. %q), %d missing (e.g. %q); first difference at %s",
		len(g), len(w), extra, exampleExtra, missing, exampleMissing, firstDiff(got, want))
}

// countManifests counts the complete checkpoints in a file bucket.
func countManifests(t *testing.T, dir string) int {
	t.Helper()
	m, err := filepath.Glob(filepath.Join(dir, "checkpoints", "*", "manifest.json"))
	if err != nil {
		t.Fatal(err)
	}
	return len(m)
}

// fakeS3 serves an S3 API (gofakes3, in memory) on loopback holding an
// empty bucket and returns its gocloud URL and the environment a child
// needs to reach it: static dummy credentials, no instance metadata, no
// AWS configuration files.
func fakeS3(t *testing.T, name string) bucket {
	t.Helper()
	backend := s3mem.New()
	if err := backend.CreateBucket(name); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(gofakes3.New(backend).Server())
	t.Cleanup(srv.Close)
	none := filepath.Join(t.TempDir(), "none")
	env := append(os.Environ(),
		"AWS_EC2_METADATA_DISABLED=true",
		"AWS_ACCESS_KEY_ID=test",
		"AWS_SECRET_ACCESS_KEY=test",
		"AWS_REGION=us-east-1",
		"AWS_CONFIG_FILE="+none,
		"AWS_SHARED_CREDENTIALS_FILE="+none,
	)
	q := url.Values{"endpoint": {srv.URL}, "use_path_style": {"true"}, "disable_https": {"true"}, "region": {"us-east-1"}}
	return bucket{url: "s3://" + name + "?" + q.Encode(), env: env}
}
