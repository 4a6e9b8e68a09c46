package source_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/volga-go/volga/source"
)

// The brute-force check of the text sources: random CSV and JSON-lines
// inputs written by the test (awkward quoting, line breaks inside fields,
// CRLF, blank lines, a byte order mark, every time format the docs
// accept, and bad rows of every kind in between) are read back and
// compared, value by value, with the rows the test meant to write and the
// dead letters it planted; then, from every position Position gave after
// a Read, a fresh source that Seeks there must give exactly the remaining
// rows and dead letters: none lost, none twice. The same inputs go
// through gzip and zstd and through NewCSVFiles / NewJSONLFiles split
// into several files.

// rvRow is a row as the test means it: id int64, name string, amt
// float64, ok bool, ts in milliseconds; nil is NULL.
type rvRow [5]any

// rvSchema is the schema the inputs are read with.
var rvSchema = arrow.NewSchema([]arrow.Field{
	{Name: "id", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
	{Name: "name", Type: arrow.BinaryTypes.String, Nullable: true},
	{Name: "amt", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
	{Name: "ok", Type: arrow.FixedWidthTypes.Boolean, Nullable: true},
	{Name: "ts", Type: arrow.FixedWidthTypes.Timestamp_ms, Nullable: true},
}, nil)

// rvDead is a planted bad row: its line in its file, and its text.
type rvDead struct {
	file string
	line int64
	raw  string
}

// rvInput is one generated input: the text of each file and what reading
// it must give.
type rvInput struct {
	texts []string
	rows  []rvRow
	dead  []rvDead // file is the index of the file, as a string
}

// rvValues returns the test rows of a batch read with rvSchema.
func rvValues(rec arrow.RecordBatch) []rvRow {
	out := make([]rvRow, rec.NumRows())
	id := rec.Column(0).(*array.Int64)
	name := rec.Column(1).(*array.String)
	amt := rec.Column(2).(*array.Float64)
	ok := rec.Column(3).(*array.Boolean)
	ts := rec.Column(4).(*array.Timestamp)
	for i := range out {
		if id.IsValid(i) {
			out[i][0] = id.Value(i)
		}
		if name.IsValid(i) {
			out[i][1] = name.Value(i)
		}
		if amt.IsValid(i) {
			out[i][2] = amt.Value(i)
		}
		if ok.IsValid(i) {
			out[i][3] = ok.Value(i)
		}
		if ts.IsValid(i) {
			out[i][4] = int64(ts.Value(i))
		}
	}
	return out
}

func rvEqual(a, b rvRow) bool {
	for i := range a {
		x, y := a[i], b[i]
		if fx, ok := x.(float64); ok {
			fy, ok := y.(float64)
			if !ok || !(fx == fy && math.Signbit(fx) == math.Signbit(fy) || math.IsNaN(fx) && math.IsNaN(fy)) {
				return false
			}
			continue
		}
		if x != y {
			return false
		}
	}
	return true
}

// rvName returns a random string, rich in CSV and JSON syntax, or "" .
func rvName(r *rand.Rand) string {
	words := []string{"", "a", "a,b", `"`, `say "hi"`, "x\ny", "x\r\ny", "\r", "x\r", " lead", "trail ",
		"NULL", "true", "12", "2024-01-03T10:00:00Z", "é, ü", "日本", `back\slash`, `{"a":1}`, "\t", "\u2028", "#"}
	switch r.IntN(3) {
	case 0:
		return words[r.IntN(len(words))]
	case 1:
		return words[r.IntN(len(words))] + words[r.IntN(len(words))]
	}
	const alphabet = ",\"\r\n \t\\{}[]:ab01é"
	runes := []rune(alphabet)
	var sb strings.Builder
	for range r.IntN(7) {
		sb.WriteRune(runes[r.IntN(len(runes))])
	}
	return sb.String()
}

// rvTime returns a time in milliseconds and a way to write it that the
// docs say the text sources read: RFC 3339 (with Z, z, an offset, a
// fraction), the space form pandas and SQL write (UTC unless it has an
// offset), or the number of milliseconds (a timestamp[ms] column given
// with WithSchema).
func rvTime(r *rand.Rand) (int64, string) {
	ms := r.Int64N(4e12) - 1e12 // 1938 to 2096
	if r.IntN(8) == 0 {
		ms = ms / 1000 * 1000
	}
	t := time.UnixMilli(ms).UTC()
	switch r.IntN(7) {
	case 0:
		return ms, t.Format("2006-01-02T15:04:05.000Z07:00")
	case 1:
		return ms, t.Format(time.RFC3339Nano)
	case 2:
		loc := time.FixedZone("", (r.IntN(28)-14)*3600+r.IntN(2)*1800)
		return ms, t.In(loc).Format("2006-01-02T15:04:05.999999999-07:00")
	case 3:
		return ms, t.Format("2006-01-02 15:04:05.999")
	case 4:
		// Micro and nanoseconds below the millisecond are cut off.
		sub := r.IntN(1e6)
		return ms, t.Add(time.Duration(sub)).Format("2006-01-02 15:04:05.000000000")
	case 5:
		return ms, strings.ToLower(t.Format("2006-01-02T15:04:05.000Z"))
	}
	return ms, strconv.FormatInt(ms, 10)
}

// rvFloat returns a float and a text strconv.ParseFloat reads as it.
func rvFloat(r *rand.Rand) (float64, string) {
	switch r.IntN(8) {
	case 0:
		return math.NaN(), []string{"NaN", "nan"}[r.IntN(2)]
	case 1:
		return math.Inf(1), []string{"Inf", "+Inf", "infinity"}[r.IntN(3)]
	case 2:
		return math.Inf(-1), "-Inf"
	case 3:
		return math.Copysign(0, -1), "-0"
	case 4:
		f := float64(r.Int64N(1e6))
		return f, strconv.FormatFloat(f, 'f', -1, 64)
	}
	f := r.NormFloat64() * math.Pow(10, float64(r.IntN(40)-20))
	return f, strconv.FormatFloat(f, "egf"[r.IntN(3)], -1, 64)
}

// rvCSVField writes s as a CSV field, quoted when it must be and
// sometimes when it need not.
func rvCSVField(r *rand.Rand, s string) string {
	if strings.ContainsAny(s, ",\"\r\n") || (s != "" && r.IntN(4) == 0) {
		return `"` + strings.ReplaceAll(s, `"`, `""`) + `"`
	}
	return s
}

// genCSV writes rows random rows into 1 to files CSV files, with bad
// rows, blank lines and both line ends in between.
func genCSV(r *rand.Rand, rows, files int) rvInput {
	var in rvInput
	nf := 1 + r.IntN(files)
	eol := func() string { return []string{"\n", "\r\n"}[r.IntN(2)] }
	names := []string{"id", "name", "amt", "ok", "ts"}
	for f := range nf {
		var b strings.Builder
		if r.IntN(4) == 0 {
			b.WriteString("\ufeff")
		}
		// The header: its columns in any order in later files, and an
		// extra column sometimes.
		cols := []int{0, 1, 2, 3, 4}
		if f > 0 {
			r.Shuffle(len(cols), func(i, j int) { cols[i], cols[j] = cols[j], cols[i] })
		}
		extra := r.IntN(3) == 0
		var hdr []string
		for _, c := range cols {
			hdr = append(hdr, names[c])
		}
		if extra {
			hdr = append(hdr, "extra")
		}
		b.WriteString(strings.Join(hdr, ","))
		line := int64(1)
		n := rows / nf
		if f == nf-1 {
			n = rows - rows/nf*(nf-1)
		}
		for range n {
			b.WriteString(eol())
			line++
			for r.IntN(10) == 0 { // blank lines
				b.WriteString(eol())
				line++
			}
			var row rvRow
			fields := make([]string, 5)
			if r.IntN(8) != 0 {
				v := r.Int64() - r.Int64()
				row[0] = v
				fields[0] = strconv.FormatInt(v, 10)
				if v >= 0 && r.IntN(5) == 0 {
					fields[0] = "+" + fields[0]
				}
			}
			if s := rvName(r); s != "" && r.IntN(8) != 0 {
				row[1] = s
				fields[1] = rvCSVField(r, s)
			} else if r.IntN(2) == 0 {
				fields[1] = `""` // quoted empty: NULL too
			}
			if r.IntN(8) != 0 {
				row[2], fields[2] = rvFloat(r)
				fields[2] = rvCSVField(r, fields[2])
			}
			if r.IntN(8) != 0 {
				v := r.IntN(2) == 0
				row[3] = v
				fields[3] = []string{strconv.FormatBool(v), strings.ToUpper(strconv.FormatBool(v))}[r.IntN(2)]
			}
			if r.IntN(8) != 0 {
				row[4], fields[4] = rvTime(r)
			}
			ex := ""
			if extra {
				ex = rvCSVField(r, rvName(r))
			}
			bad := r.IntN(12) == 0
			use, tooMany := cols, false
			if bad {
				switch r.IntN(7) {
				case 0:
					fields[0] = []string{"12x", "1.5", "9223372036854775808", " 1"}[r.IntN(4)]
				case 1:
					fields[3] = []string{"yes", "1", "t"}[r.IntN(3)]
				case 2:
					fields[4] = []string{"2024-13-01T00:00:00Z", "2024-01-01T00:00:00+0200", "1.5e12", "yesterday"}[r.IntN(4)]
				case 3:
					tooMany = true
				case 4:
					use = slicesWithout(cols, 4) // too few
				case 5:
					// A bare quote, or text after a closing quote: the
					// record ends with its line, so no other field
					// may go on to the next.
					fields[1] = []string{`a"b`, `"x"y`}[r.IntN(2)]
					ex = "e"
				case 6:
					fields[2] = rvCSVField(r, []string{"1,5", "x", "0x1p-2x"}[r.IntN(3)])
				}
				if tooMany || len(use) < len(cols) {
					// A record of the wrong length on one line: one
					// of several lines would be a dead letter of its
					// first line, the others read again (see
					// TestCSVOpenQuote).
					for i, f := range fields {
						if strings.ContainsAny(f, "\r\n") {
							fields[i] = `"one line"`
						}
					}
					if strings.ContainsAny(ex, "\r\n") {
						ex = "e"
					}
				}
			}
			var rec []string
			for _, c := range use {
				rec = append(rec, fields[c])
			}
			if extra {
				rec = append(rec, ex)
			}
			if tooMany {
				rec = append(rec, "more")
			}
			text := strings.Join(rec, ",")
			b.WriteString(text)
			if bad {
				in.dead = append(in.dead, rvDead{file: strconv.Itoa(f), line: line, raw: text})
			} else {
				in.rows = append(in.rows, row)
			}
			line += int64(strings.Count(text, "\n"))
		}
		if r.IntN(2) == 0 {
			b.WriteString(eol())
		}
		in.texts = append(in.texts, b.String())
	}
	return in
}

// slicesWithout returns a copy of s without v.
func slicesWithout(s []int, v int) []int {
	var out []int
	for _, x := range s {
		if x != v {
			out = append(out, x)
		}
	}
	return out
}

// genJSONL writes rows random rows into 1 to files JSON-lines files, with
// bad lines and blank lines in between.
func genJSONL(r *rand.Rand, rows, files int) rvInput {
	var in rvInput
	nf := 1 + r.IntN(files)
	quote := func(s string) string {
		b, err := json.Marshal(s)
		if err != nil {
			panic(err)
		}
		q := string(b)
		if r.IntN(3) == 0 {
			// Escape every ASCII letter: the reader must decode \u.
			var sb strings.Builder
			sb.WriteByte('"')
			esc := false
			for _, c := range q[1 : len(q)-1] {
				if esc || c == '\\' {
					// An escape and the letter after it stay.
					esc = !esc && c == '\\'
					sb.WriteRune(c)
					continue
				}
				if c >= 'a' && c <= 'z' {
					fmt.Fprintf(&sb, `\u%04x`, c)
				} else {
					sb.WriteRune(c)
				}
			}
			sb.WriteByte('"')
			q = sb.String()
		}
		return q
	}
	sp := func() string { return []string{"", " ", "\t", "  "}[r.IntN(4)] }
	for f := range nf {
		var b strings.Builder
		if r.IntN(4) == 0 {
			b.WriteString("\ufeff")
		}
		line := int64(1)
		n := rows / nf
		if f == nf-1 {
			n = rows - rows/nf*(nf-1)
		}
		for i := range n {
			if i > 0 {
				b.WriteString([]string{"\n", "\r\n"}[r.IntN(2)])
				line++
			}
			for r.IntN(10) == 0 { // blank lines, maybe with blanks
				b.WriteString(sp() + []string{"\n", "\r\n"}[r.IntN(2)])
				line++
			}
			var row rvRow
			var members []string
			add := func(k, v string) { members = append(members, quote(k)+sp()+":"+sp()+v) }
			if r.IntN(8) != 0 {
				v := r.Int64() - r.Int64()
				row[0] = v
				if r.IntN(5) == 0 {
					add("id", `"`+strconv.FormatInt(v, 10)+`"`)
				} else {
					add("id", strconv.FormatInt(v, 10))
				}
			} else if r.IntN(2) == 0 {
				add("id", "null")
			}
			if r.IntN(8) != 0 {
				s := rvName(r)
				row[1] = s
				add("name", quote(s))
			} else if r.IntN(2) == 0 {
				add("name", "null")
			}
			if r.IntN(8) != 0 {
				f, text := rvFloat(r)
				if math.IsNaN(f) || math.IsInf(f, 0) || r.IntN(6) == 0 {
					text = `"` + text + `"` // a string holding a number
				} else if f == math.Trunc(f) && math.Abs(f) < 1e15 && r.IntN(2) == 0 && !math.Signbit(f) {
					text = strconv.FormatInt(int64(f), 10)
				}
				row[2] = f
				add("amt", text)
			}
			if r.IntN(8) != 0 {
				v := r.IntN(2) == 0
				row[3] = v
				add("ok", []string{strconv.FormatBool(v), `"` + strings.ToUpper(strconv.FormatBool(v)) + `"`}[r.IntN(2)])
			}
			if r.IntN(8) != 0 {
				ms, text := rvTime(r)
				row[4] = ms
				if _, err := strconv.ParseInt(text, 10, 64); err != nil || r.IntN(2) == 0 {
					text = quote(text)
				}
				add("ts", text)
			}
			if r.IntN(3) == 0 {
				add("extra", []string{`{"a": [1, "}]"], "b": {"c": null}}`, `[]`, `"x"`, `-1.5e-3`, `true`}[r.IntN(5)])
			}
			r.Shuffle(len(members), func(i, j int) { members[i], members[j] = members[j], members[i] })
			text := sp() + "{" + sp() + strings.Join(members, ","+sp()) + sp() + "}" + sp()
			bad := r.IntN(12) == 0
			if bad {
				switch r.IntN(5) {
				case 0:
					text = text[:len(text)/2] + sp() // invalid JSON
					if strings.TrimSpace(text) == "" {
						text = "{"
					}
				case 1:
					text = []string{"[1, 2]", "3", `"x"`, "null", "[]"}[r.IntN(5)]
				case 2:
					text = `{"id": ` + []string{`"x"`, "1.5", "true", `{"a": 1}`, "[1]", "9223372036854775808", "1e2"}[r.IntN(7)] + "}"
				case 3:
					text = `{"ts": ` + []string{`"2024-13-01T00:00:00Z"`, "true", "1.5", `"1 Jan 2024"`}[r.IntN(4)] + "}"
				case 4:
					text = `{"ok": ` + []string{"1", `"yes"`, "[true]"}[r.IntN(3)] + `, "id": 1}`
				}
			}
			b.WriteString(text)
			if bad {
				in.dead = append(in.dead, rvDead{file: strconv.Itoa(f), line: line, raw: strings.TrimSpace(text)})
			} else {
				in.rows = append(in.rows, row)
			}
		}
		if r.IntN(2) == 0 {
			b.WriteString("\n")
		}
		in.texts = append(in.texts, b.String())
	}
	return in
}

// rvPack writes the texts of in as files named name0.ext, name1.ext, ...
// compressed as codec says ("", ".gz" or ".zst"), and returns their paths.
func rvPack(t *testing.T, in rvInput, dir, ext, codec string) []string {
	var paths []string
	for i, text := range in.texts {
		data := []byte(text)
		if codec != "" {
			data = packText(t, codec, data)
		}
		p := filepath.Join(dir, fmt.Sprintf("part%03d%s%s", i, ext, codec))
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
		paths = append(paths, p)
	}
	return paths
}

// rvState is what had been read when a position was taken.
type rvState struct {
	pos        []byte
	rows, dead int
}

// rvReadAll reads src to its end, noting the position before every Read,
// and returns the rows, and the states.
func rvReadAll(t *testing.T, src source.Source, dead *[]source.DeadLetter) ([]rvRow, []rvState) {
	t.Helper()
	var rows []rvRow
	var states []rvState
	seeker := src.(source.Seeker)
	for {
		pos, err := seeker.Position()
		if err != nil {
			t.Fatalf("Position: %v", err)
		}
		states = append(states, rvState{pos: pos, rows: len(rows), dead: len(*dead)})
		rec, err := src.Read(context.Background())
		if errors.Is(err, io.EOF) {
			return rows, states
		}
		if err != nil {
			t.Fatalf("Read: %v", err)
		}
		rows = append(rows, rvValues(rec)...)
		rec.Release()
	}
}

// rvCheck compares rows and dead letters read with the expected ones from
// index rows and dead on.
func rvCheck(t *testing.T, what string, in rvInput, paths []string, rows []rvRow, dead []source.DeadLetter, fromRow, fromDead int) {
	t.Helper()
	want := in.rows[fromRow:]
	if len(rows) != len(want) {
		t.Fatalf("%s: %d rows, want %d", what, len(rows), len(want))
	}
	for i := range rows {
		if !rvEqual(rows[i], want[i]) {
			t.Fatalf("%s: row %d: got %v, want %v", what, fromRow+i, rows[i], want[i])
		}
	}
	wantDead := in.dead[fromDead:]
	if len(dead) != len(wantDead) {
		for _, d := range dead {
			t.Logf("got dead letter %s:%d %q: %s", d.Source, d.Offset, d.Raw, d.Reason)
		}
		for _, d := range wantDead {
			t.Logf("want dead letter %s:%d %q", d.file, d.line, d.raw)
		}
		t.Fatalf("%s: %d dead letters, want %d", what, len(dead), len(wantDead))
	}
	for i, d := range dead {
		w := wantDead[i]
		f, _ := strconv.Atoi(w.file)
		if d.Offset != w.line || string(d.Raw) != w.raw || (len(paths) > 1 && d.Source != paths[f]) || d.Reason == "" {
			t.Fatalf("%s: dead letter %d: got %s:%d %q (%s), want %s:%d %q", what, fromDead+i, d.Source, d.Offset, d.Raw, d.Reason, paths[f], w.line, w.raw)
		}
	}
}

func TestReviewTextResumeBruteForce(t *testing.T) {
	seed := uint64(time.Now().UnixNano())
	if s := os.Getenv("REVIEW_SEED"); s != "" {
		seed, _ = strconv.ParseUint(s, 10, 64)
	}
	t.Logf("seed %d (REVIEW_SEED=%d reruns it)", seed, seed)
	r := rand.New(rand.NewPCG(seed, 0x5eed))
	totalRows, totalDead, totalStates := 0, 0, 0
	defer func() { t.Logf("%d rows, %d dead letters, %d positions restored", totalRows, totalDead, totalStates) }()
	for iter := range 60 {
		format := []string{"csv", "json-lines"}[iter%2]
		codec := []string{"", ".gz", ".zst"}[r.IntN(3)]
		multi := r.IntN(2) == 0
		files := 1
		if multi {
			files = 4
		}
		rows := r.IntN(120)
		var in rvInput
		ext := ".csv"
		if format == "csv" {
			in = genCSV(r, rows, files)
		} else {
			in = genJSONL(r, rows, files)
			ext = ".jsonl"
		}
		what := fmt.Sprintf("seed %d iter %d (%s%s, %d files, multi %v)", seed, iter, format, codec, len(in.texts), multi)
		dir := t.TempDir()
		paths := rvPack(t, in, dir, ext, codec)
		batch := 1 + r.IntN(9)
		open := func(dead *[]source.DeadLetter) source.Source {
			opts := []source.Option{source.WithSchema(rvSchema), source.WithBatchSize(batch), collectDead(dead)}
			var src source.Source
			var err error
			switch {
			case multi && format == "csv":
				src, err = source.NewCSVFiles(paths, opts...)
			case multi:
				src, err = source.NewJSONLFiles(paths, opts...)
			case format == "csv":
				src, err = source.NewCSV(paths[0], opts...)
			default:
				src, err = source.NewJSONL(paths[0], opts...)
			}
			if err != nil {
				t.Fatalf("%s: open: %v", what, err)
			}
			return src
		}
		var dead []source.DeadLetter
		src := open(&dead)
		got, states := rvReadAll(t, src, &dead)
		rvCheck(t, what, in, paths, got, dead, 0, 0)
		totalRows, totalDead, totalStates = totalRows+len(got), totalDead+len(dead), totalStates+len(states)
		if n := src.(interface{ DeadLetters() int64 }).DeadLetters(); n != int64(len(in.dead)) {
			t.Fatalf("%s: DeadLetters() = %d, want %d", what, n, len(in.dead))
		}
		// Seek back on the same source, to a random state.
		st := states[r.IntN(len(states))]
		dead = dead[:0]
		if err := src.(source.Seeker).Seek(st.pos); err != nil {
			t.Fatalf("%s: Seek: %v", what, err)
		}
		again, _ := rvReadAll(t, src, &dead)
		rvCheck(t, what+" after Seek back", in, paths, again, dead, st.rows, st.dead)
		src.Close()
		// Restore every position in a fresh source.
		for k, st := range states {
			var dead []source.DeadLetter
			src := open(&dead)
			if err := src.(source.Seeker).Seek(st.pos); err != nil {
				t.Fatalf("%s: Seek to state %d: %v", what, k, err)
			}
			rest, _ := rvReadAll(t, src, &dead)
			rvCheck(t, fmt.Sprintf("%s restored at state %d (row %d)", what, k, st.rows), in, paths, rest, dead, st.rows, st.dead)
			src.Close()
		}
	}
}
