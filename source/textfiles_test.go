package source_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/volga-go/volga/sink"
	"github.com/volga-go/volga/source"
)

// textFilesCase is a set of CSV or JSON-lines files written under a
// directory, and what reading them in name order must give.
type textFilesCase struct {
	dir   string
	paths []string
	rows  [][]any // id, ts, name of every good row, in order
	dead  []source.DeadLetter
}

// writeTextFiles writes files of random rows (id int64, ts int64 in
// order up to lateMs behind the greatest before, name string) in format
// "csv" or "jsonl": some files empty of rows, some with a row that does
// not decode, CSV headers in random column orders with an extra column.
func writeTextFiles(t *testing.T, r *rand.Rand, format string, lateMs int64) textFilesCase {
	t.Helper()
	c := textFilesCase{dir: t.TempDir()}
	var id, newest int64 = 0, 1_700_000_000_000
	nfiles := 1 + r.IntN(4)
	for f := range nfiles {
		var b strings.Builder
		line := int64(1)
		cols := []string{"id", "ts", "name"}
		if format == "csv" {
			if f > 0 {
				r.Shuffle(len(cols), func(i, j int) { cols[i], cols[j] = cols[j], cols[i] })
				cols = append(cols, "extra")
			}
			b.WriteString(strings.Join(cols, ",") + "\n")
			line++
		}
		path := filepath.Join(c.dir, fmt.Sprintf("part-%02d.%s", f, format))
		nrows := r.IntN(12)
		if f == 0 {
			nrows++ // the first file infers the schema from a row
		}
		for range nrows {
			if r.IntN(10) == 0 && f > 0 {
				// A row the first file's schema cannot decode.
				if format == "csv" {
					vals := map[string]string{"id": "x", "ts": "1", "name": "bad", "extra": ""}
					b.WriteString(csvLine(cols, vals))
				} else {
					b.WriteString(`{"id": "x", "ts": 1, "name": "bad"}` + "\n")
				}
				c.dead = append(c.dead, source.DeadLetter{Source: path, Offset: line})
				line++
				continue
			}
			id++
			ts := newest + int64(r.IntN(1000))
			if lateMs > 0 && r.IntN(3) == 0 {
				ts = newest - int64(r.IntN(int(lateMs)+1))
			}
			newest = max(newest, ts)
			name := fmt.Sprintf("n%d,\"q\"", id)
			if format == "csv" {
				vals := map[string]string{"id": fmt.Sprint(id), "ts": fmt.Sprint(ts), "name": `"` + strings.ReplaceAll(name, `"`, `""`) + `"`, "extra": "e"}
				b.WriteString(csvLine(cols, vals))
			} else {
				fmt.Fprintf(&b, `{"name": %q, "ts": %d, "id": %d, "extra": true}`+"\n", name, ts, id)
			}
			c.rows = append(c.rows, []any{id, ts, name})
			line++
		}
		if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
		c.paths = append(c.paths, path)
	}
	// Files the directory reading leaves out.
	for _, name := range []string{"_SUCCESS", ".hidden." + format, "notes.txt"} {
		if err := os.WriteFile(filepath.Join(c.dir, name), []byte("junk\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return c
}

func csvLine(cols []string, vals map[string]string) string {
	out := make([]string, len(cols))
	for i, c := range cols {
		out[i] = vals[c]
	}
	return strings.Join(out, ",") + "\n"
}

// projectRows returns the id, ts and name of rows read with the columns
// of schema names.
func projectRows(t *testing.T, names []string, rows [][]any) [][]any {
	t.Helper()
	idx := map[string]int{}
	for i, n := range names {
		idx[n] = i
	}
	out := make([][]any, len(rows))
	for i, r := range rows {
		out[i] = []any{r[idx["id"]], r[idx["ts"]], r[idx["name"]]}
	}
	return out
}

func schemaNames(src source.Source) []string {
	var names []string
	for _, f := range src.Schema().Fields() {
		names = append(names, f.Name)
	}
	return names
}

// TestTextFiles: a directory or glob of CSV or JSON-lines files reads as
// the rows of every file in name order, each later file decoded with the
// first file's schema (CSV columns found by name in each header), rows
// that do not decode going to the dead letters named after their file and
// line; reading resumes at every position Position gave (Seek), across
// file boundaries; and a WithTimeOrder promise spans the files: the bound
// after every Read is at most every value still to come, math.MaxInt64
// only at the end.
func TestTextFiles(t *testing.T) {
	for _, format := range []string{"csv", "jsonl"} {
		for seed := range uint64(40) {
			t.Run(fmt.Sprintf("%s/%d", format, seed), func(t *testing.T) {
				r := rand.New(rand.NewPCG(seed, 7))
				lateMs := int64(r.IntN(2) * 500)
				c := writeTextFiles(t, r, format, lateMs)
				batch := 1 + r.IntN(5)
				var dead []source.DeadLetter
				opts := []source.Option{source.WithBatchSize(batch), source.WithSampleRows(1), collectDead(&dead),
					source.WithTimeOrder("ts", time.Duration(lateMs)*time.Millisecond)}
				path := c.dir
				if seed%2 == 1 {
					path = filepath.Join(c.dir, "part-*."+format)
				}
				src, err := source.Open(path, opts...)
				if err != nil {
					t.Fatal(err)
				}
				defer src.Close()
				if got := src.(*source.TextFiles).Files(); !reflect.DeepEqual(got, c.paths) {
					t.Fatalf("files %v, want %v", got, c.paths)
				}
				names := schemaNames(src)
				bounder := src.(source.LowerBounder)
				seeker := src.(source.Seeker)
				type mark struct {
					pos  []byte
					read int
				}
				marks := []mark{}
				if pos, err := seeker.Position(); err != nil {
					t.Fatal(err)
				} else {
					marks = append(marks, mark{pos, 0})
				}
				var got [][]any
				lastBound := int64(math.MinInt64)
				for {
					rec, err := src.Read(context.Background())
					if errors.Is(err, io.EOF) {
						break
					}
					if err != nil {
						t.Fatal(err)
					}
					got = append(got, projectRows(t, names, sink.Rows(rec))...)
					rec.Release()
					pos, err := seeker.Position()
					if err != nil {
						t.Fatal(err)
					}
					marks = append(marks, mark{pos, len(got)})
					b, ok := bounder.LowerBound("ts")
					if !ok {
						t.Fatalf("no bound after %d rows", len(got))
					}
					if b < lastBound {
						t.Fatalf("bound %d after %d rows, below the bound before, %d", b, len(got), lastBound)
					}
					lastBound = b
					for _, row := range c.rows[len(got):] {
						if ts := row[1].(int64); ts < b {
							t.Fatalf("bound %d after %d rows is above %d, still to come", b, len(got), ts)
						}
					}
					if b == math.MaxInt64 && len(got) < len(c.rows) {
						t.Fatalf("bound math.MaxInt64 after %d of %d rows", len(got), len(c.rows))
					}
				}
				if b, ok := bounder.LowerBound("ts"); !ok || b != math.MaxInt64 {
					t.Fatalf("bound at the end %d (%v), want math.MaxInt64", b, ok)
				}
				if !reflect.DeepEqual(got, c.rows) {
					t.Fatalf("rows\n%v\nwant\n%v", got, c.rows)
				}
				if len(dead) != len(c.dead) {
					t.Fatalf("%d dead letters, want %d: %+v", len(dead), len(c.dead), dead)
				}
				for i, d := range dead {
					if d.Source != c.dead[i].Source || d.Offset != c.dead[i].Offset {
						t.Errorf("dead letter %d at %s:%d, want %s:%d", i, d.Source, d.Offset, c.dead[i].Source, c.dead[i].Offset)
					}
				}
				if n := src.(interface{ DeadLetters() int64 }).DeadLetters(); n != int64(len(c.dead)) {
					t.Errorf("DeadLetters() = %d, want %d", n, len(c.dead))
				}

				// Resume at every position: the rows after it, exactly.
				for _, m := range marks {
					again, err := source.Open(path, opts...)
					if err != nil {
						t.Fatal(err)
					}
					if err := again.(source.Seeker).Seek(m.pos); err != nil {
						t.Fatalf("Seek after %d rows: %v", m.read, err)
					}
					rest, _ := readAll(t, again)
					if want := c.rows[m.read:]; !reflect.DeepEqual(projectRows(t, names, rest), want) && (len(rest) > 0 || len(want) > 0) {
						t.Fatalf("resumed after %d rows: %v, want %v", m.read, projectRows(t, names, rest), want)
					}
					again.Close()
				}
			})
		}
	}
}

// TestTextFilesTimeOrderAcrossFiles: a later file whose rows start further
// below the earlier files' greatest value than promised breaks the
// WithTimeOrder promise, with an error naming that file.
func TestTextFilesTimeOrderAcrossFiles(t *testing.T) {
	dir := t.TempDir()
	for name, body := range map[string]string{
		"a.csv": "ts,v\n1000,1\n5000,2\n",
		"b.csv": "ts,v\n3000,3\n6000,4\n",
	} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// b.csv is in order, but its first row is 2 s below a.csv's last, a
	// lateness of 1 s.
	src, err := source.Open(dir, source.WithTimeOrder("ts", time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	var rows int64
	for {
		rec, err := src.Read(context.Background())
		if err != nil {
			if err == io.EOF || !strings.Contains(err.Error(), "b.csv") || !strings.Contains(err.Error(), "WithTimeOrder") {
				t.Fatalf("err = %v, want the broken promise in b.csv", err)
			}
			break
		}
		rows += rec.NumRows()
		rec.Release()
	}
	if rows != 2 {
		t.Fatalf("%d rows before the error, want a.csv's 2", rows)
	}
}

// TestOpenManyFormats: Open of a directory or glob picks the format from
// the files' extensions, and refuses a mix of formats or files of no known
// format, saying so.
func TestOpenManyFormats(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("a.ndjson", `{"x": 1}`+"\n")
	write("b.JSON", `{"x": 2}`+"\n")
	write("c.txt", "x\n3\n")
	src, err := source.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	rows, _ := readAll(t, src)
	src.Close()
	if want := [][]any{{int64(1)}, {int64(2)}}; !reflect.DeepEqual(rows, want) {
		t.Fatalf("JSON-lines directory: %v, want %v", rows, want)
	}
	src, err = source.Open(filepath.Join(dir, "*"))
	if err != nil {
		t.Fatal(err)
	}
	rows, _ = readAll(t, src)
	src.Close()
	if want := [][]any{{int64(1)}, {int64(2)}}; !reflect.DeepEqual(rows, want) {
		t.Fatalf("glob leaving out c.txt: %v, want %v", rows, want)
	}

	write("d.csv", "x\n4\n")
	if _, err := source.Open(dir); err == nil || !strings.Contains(err.Error(), "more than one format (csv and json-lines)") || !strings.Contains(err.Error(), "*.csv") {
		t.Fatalf("mixed directory: %v", err)
	}
	if _, err := source.Open(filepath.Join(dir, "*")); err == nil || !strings.Contains(err.Error(), "more than one format") {
		t.Fatalf("mixed glob: %v", err)
	}
	src, err = source.Open(filepath.Join(dir, "*.csv"))
	if err != nil {
		t.Fatal(err)
	}
	rows, _ = readAll(t, src)
	src.Close()
	if want := [][]any{{int64(4)}}; !reflect.DeepEqual(rows, want) {
		t.Fatalf("glob of CSV files: %v, want %v", rows, want)
	}
	if _, err := source.Open(filepath.Join(dir, "*.txt")); err == nil || !strings.Contains(err.Error(), "c.txt") {
		t.Fatalf("glob of unknown files: %v", err)
	}
	if _, err := source.Open(filepath.Join(dir, "*.none")); err == nil || !strings.Contains(err.Error(), "no file matches") {
		t.Fatalf("glob matching nothing: %v", err)
	}
	empty := t.TempDir()
	if _, err := source.Open(empty); err == nil || !strings.Contains(err.Error(), "no .csv, .jsonl") {
		t.Fatalf("empty directory: %v", err)
	}

	// A later file without a column of the first file's schema fails
	// when reading reaches it, naming it.
	bad := t.TempDir()
	for name, body := range map[string]string{"1.csv": "x,y\n1,2\n", "2.csv": "x\n3\n"} {
		if err := os.WriteFile(filepath.Join(bad, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	src, err = source.Open(bad)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	var rerr error
	for rerr == nil {
		var rec arrow.RecordBatch
		if rec, rerr = src.Read(context.Background()); rerr == nil {
			rec.Release()
		}
	}
	if !strings.Contains(rerr.Error(), "2.csv") || !strings.Contains(rerr.Error(), `column "y"`) {
		t.Fatalf("file missing a column: %v", rerr)
	}
}
