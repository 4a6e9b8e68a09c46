package request

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"math/big"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Record is one lookup: a key, a time and the features for them, as
// served online (read from a log) or as recomputed offline.
type Record struct {
	Key      map[string]any
	At       time.Time
	Features Features
}

// ReadLog reads logged lookups in the response format of NewHandler:
// one JSON object per line with "key", "at" and "features" ("watermark"
// is optional: without it a lookup counts as served complete, as with
// "+inf"), or a line holding an array of such objects. Blank lines are
// skipped. Errors name the line.
func ReadLog(r io.Reader) ([]Record, error) {
	var out []Record
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), 64<<20)
	for line := 1; sc.Scan(); line++ {
		b := bytes.TrimSpace(sc.Bytes())
		if len(b) == 0 {
			continue
		}
		raws := []json.RawMessage{b}
		if b[0] == '[' {
			raws = nil
			if err := json.Unmarshal(b, &raws); err != nil {
				return nil, fmt.Errorf("request: log line %d: %v", line, err)
			}
		}
		for _, raw := range raws {
			rec, err := parseRecord(raw)
			if err != nil {
				return nil, fmt.Errorf("request: log line %d: %v", line, err)
			}
			out = append(out, rec)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("request: reading the log: %w", err)
	}
	return out, nil
}

func parseRecord(raw json.RawMessage) (Record, error) {
	var w struct {
		Key       map[string]any  `json:"key"`
		At        json.RawMessage `json:"at"`
		Watermark json.RawMessage `json:"watermark"`
		Features  json.RawMessage `json:"features"`
		Error     string          `json:"error"`
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if err := dec.Decode(&w); err != nil {
		return Record{}, err
	}
	switch {
	case w.Error != "":
		return Record{}, fmt.Errorf("a logged error response (%q) is not a lookup", w.Error)
	case w.Key == nil:
		return Record{}, errors.New(`missing "key"`)
	case len(w.Features) == 0:
		return Record{}, errors.New(`missing "features"`)
	}
	rec := Record{Key: make(map[string]any, len(w.Key))}
	for k, v := range w.Key {
		s, err := scalar(v)
		if err != nil {
			return Record{}, fmt.Errorf("key column %q: %v", k, err)
		}
		rec.Key[k] = s
	}
	var err error
	if rec.At, err = parseAt(w.At); err != nil {
		return Record{}, err
	}
	if len(bytes.TrimSpace(w.Watermark)) == 0 {
		// No watermark logged: nothing says the answer was incomplete,
		// so Check compares it strictly.
		rec.Features.Watermark = EndWatermark
	} else if rec.Features.Watermark, err = parseWatermark(w.Watermark); err != nil {
		return Record{}, err
	}
	if rec.Features.Names, rec.Features.Values, err = decodeOrdered(w.Features); err != nil {
		return Record{}, fmt.Errorf("features: %v", err)
	}
	return rec, nil
}

// CheckOptions tune Check.
type CheckOptions struct {
	// RelTolerance is the largest relative difference between two numbers
	// that still counts as a match: 0 means the default, 1e-9 (as SPEC
	// section 4 asks of floats), and a negative value none (an exact
	// comparison). Integers always compare exactly.
	RelTolerance float64
	// AbsTolerance is the largest absolute difference between two
	// numbers, not both integers, that still counts as a match whatever
	// their relative difference (default 0): near zero, where a sum
	// that cancels out leaves 1e-17 on one side and 0 on the other.
	AbsTolerance float64
	// MaxExamples is how many mismatches the report keeps: 0 means the
	// default, 10, and a negative value none (only the counts).
	MaxExamples int
}

// Mismatch is one feature value that differs between served and
// recomputed, or that only one side has.
type Mismatch struct {
	Key        map[string]any
	At         time.Time
	Feature    string
	Served     any
	Recomputed any
	// NotServed and NotRecomputed mark a value only one side has (as
	// opposed to a NULL value, which is nil).
	NotServed, NotRecomputed bool
	RelDiff                  float64 // NaN when the values are not both numbers
}

// Report is the result of Check. Counts are of feature values: one per
// feature of each lookup.
type Report struct {
	// Lookups is the number of served lookups checked.
	Lookups int
	// Matched values are equal (numbers within the tolerance).
	Matched int
	// Mismatched values differ.
	Mismatched int
	// Unsettled values differ on lookups served before their time was
	// complete: the served watermark was earlier than the lookup's time,
	// so rows still on their way then (within the stream's out-of-order
	// bound) can explain the difference. They are not mismatches.
	Unsettled int
	// Missing values were served but not recomputed: the lookup (key and
	// time) or the feature is absent offline.
	Missing int
	// Extra values were recomputed but never served.
	Extra int
	// MaxRelDiff is the largest relative difference |a-b| / max(|a|,|b|)
	// between two numbers compared, matched or not, and MaxRelDiffAt
	// where it occurred (nil when no numbers differed).
	MaxRelDiff   float64
	MaxRelDiffAt *Mismatch
	// Examples are the first mismatched, missing or extra values.
	Examples []Mismatch
}

// OK reports whether served and recomputed features agree entirely.
func (r *Report) OK() bool { return r.Mismatched == 0 && r.Missing == 0 && r.Extra == 0 }

// String is a readable summary of a few lines.
func (r *Report) String() string {
	var b strings.Builder
	verdict := "consistent"
	if !r.OK() {
		verdict = "INCONSISTENT"
	}
	fmt.Fprintf(&b, "%s: %d lookup%s checked; feature values: %d matched, %d mismatched, %d missing, %d extra\n",
		verdict, r.Lookups, plural(r.Lookups), r.Matched, r.Mismatched, r.Missing, r.Extra)
	if r.Unsettled > 0 {
		fmt.Fprintf(&b, "%d value%s differ on lookups served before their time was complete (watermark earlier than the lookup time): not counted as mismatches\n", r.Unsettled, plural(r.Unsettled))
	}
	if r.MaxRelDiffAt != nil {
		m := r.MaxRelDiffAt
		fmt.Fprintf(&b, "largest relative difference: %.3g (%s, key %s at %s: served %s, recomputed %s)\n",
			r.MaxRelDiff, m.Feature, keyString(m.Key), formatTime(m.At), AppendJSON(nil, m.Served), AppendJSON(nil, m.Recomputed))
	} else {
		b.WriteString("largest relative difference: 0\n")
	}
	if n := r.Mismatched + r.Missing + r.Extra; n > 0 {
		fmt.Fprintf(&b, "first %d of %d differences:\n", len(r.Examples), n)
		for _, m := range r.Examples {
			fmt.Fprintf(&b, "  key %s at %s, %s: ", keyString(m.Key), formatTime(m.At), m.Feature)
			switch {
			case m.NotServed:
				fmt.Fprintf(&b, "not served, recomputed %s\n", AppendJSON(nil, m.Recomputed))
			case m.NotRecomputed:
				fmt.Fprintf(&b, "served %s, not recomputed\n", AppendJSON(nil, m.Served))
			default:
				fmt.Fprintf(&b, "served %s, recomputed %s\n", AppendJSON(nil, m.Served), AppendJSON(nil, m.Recomputed))
			}
		}
	}
	return b.String()
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

// Check compares served lookups with recomputed ones. Records are
// paired by key and time (key columns case-insensitively; a key and time
// logged twice pairs with two recomputed records), features by name
// (case-insensitively). Values are compared as their JSON renderings
// (AppendJSON), so a value read back from a JSON log equals the Go value
// it was rendered from; numbers compare within opts.RelTolerance or
// opts.AbsTolerance. A
// value that differs on a lookup served with a watermark earlier than
// its time is Unsettled, not Mismatched: rows that had not yet arrived
// when it was served may explain it. Served records built in Go carry the
// watermark their lookup answered (Features.Watermark; EndWatermark for
// an answer known complete): the zero value is the epoch, which counts
// every later lookup as served early.
func Check(served, recomputed []Record, opts CheckOptions) *Report {
	switch {
	case opts.RelTolerance == 0:
		opts.RelTolerance = 1e-9
	case opts.RelTolerance < 0:
		opts.RelTolerance = 0
	}
	switch {
	case opts.MaxExamples == 0:
		opts.MaxExamples = 10
	case opts.MaxExamples < 0:
		opts.MaxExamples = 0
	}
	tol := tolerance{rel: opts.RelTolerance, abs: max(opts.AbsTolerance, 0)}
	rep := &Report{Lookups: len(served)}
	note := func(m Mismatch) {
		if len(rep.Examples) < opts.MaxExamples {
			rep.Examples = append(rep.Examples, m)
		}
	}
	byKey := map[string][]int{}
	for i, rc := range recomputed {
		k := recordKey(rc)
		byKey[k] = append(byKey[k], i)
	}
	used := make([]bool, len(recomputed))
	for _, s := range served {
		k := recordKey(s)
		idx := byKey[k]
		if len(idx) == 0 {
			for i, n := range s.Features.Names {
				rep.Missing++
				note(Mismatch{Key: s.Key, At: s.At, Feature: n, Served: s.Features.Values[i], NotRecomputed: true, RelDiff: math.NaN()})
			}
			continue
		}
		byKey[k] = idx[1:]
		used[idx[0]] = true
		rc := recomputed[idx[0]]
		seen := make([]bool, len(rc.Features.Names))
		for i, n := range s.Features.Names {
			j := slices.IndexFunc(rc.Features.Names, func(m string) bool { return strings.EqualFold(m, n) })
			if j < 0 {
				rep.Missing++
				note(Mismatch{Key: s.Key, At: s.At, Feature: n, Served: s.Features.Values[i], NotRecomputed: true, RelDiff: math.NaN()})
				continue
			}
			seen[j] = true
			sv, rv := s.Features.Values[i], rc.Features.Values[j]
			eq, rel := compare(normalize(sv), normalize(rv), tol)
			m := Mismatch{Key: s.Key, At: s.At, Feature: n, Served: sv, Recomputed: rv, RelDiff: rel}
			if !math.IsNaN(rel) && rel > rep.MaxRelDiff {
				rep.MaxRelDiff = rel
				mm := m
				rep.MaxRelDiffAt = &mm
			}
			switch {
			case eq:
				rep.Matched++
			case s.Features.Watermark < s.At.UnixMilli():
				rep.Unsettled++
			default:
				rep.Mismatched++
				note(m)
			}
		}
		for j, n := range rc.Features.Names {
			if !seen[j] {
				rep.Extra++
				note(Mismatch{Key: s.Key, At: s.At, Feature: n, NotServed: true, Recomputed: rc.Features.Values[j], RelDiff: math.NaN()})
			}
		}
	}
	for i, rc := range recomputed {
		if used[i] {
			continue
		}
		for j, n := range rc.Features.Names {
			rep.Extra++
			note(Mismatch{Key: rc.Key, At: rc.At, Feature: n, NotServed: true, Recomputed: rc.Features.Values[j], RelDiff: math.NaN()})
		}
	}
	return rep
}

// recordKey identifies a lookup: its key (columns lower-cased, sorted,
// values as JSON) and its time.
func recordKey(r Record) string {
	cols := make([]string, 0, len(r.Key))
	lower := make(map[string]any, len(r.Key))
	for c, v := range r.Key {
		l := strings.ToLower(c)
		cols = append(cols, l)
		lower[l] = v
	}
	slices.Sort(cols)
	var b []byte
	for _, c := range cols {
		b = appendString(b, c)
		b = append(b, ':')
		b = AppendJSON(b, lower[c])
		b = append(b, ',')
	}
	return strconv.FormatInt(r.At.UnixNano(), 10) + "|" + string(b)
}

func keyString(k map[string]any) string {
	cols := make([]string, 0, len(k))
	for c := range k {
		cols = append(cols, c)
	}
	slices.Sort(cols)
	b := []byte{'{'}
	for i, c := range cols {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendString(b, c)
		b = append(b, ':')
		b = AppendJSON(b, k[c])
	}
	return string(append(b, '}'))
}

// normalize renders v as JSON and decodes it back (numbers as
// json.Number), so that values of different Go types with the same JSON
// form compare equal.
func normalize(v any) any {
	var out any
	dec := json.NewDecoder(bytes.NewReader(AppendJSON(nil, v)))
	dec.UseNumber()
	if err := dec.Decode(&out); err != nil {
		return v
	}
	return out
}

// tolerance is how far apart two numbers may be and still match: within
// rel relative difference, or abs absolute difference.
type tolerance struct{ rel, abs float64 }

// compare compares two normalized values. rel is the largest relative
// difference between numbers found in them, NaN when none were compared.
func compare(a, b any, tol tolerance) (equal bool, rel float64) {
	rel = math.NaN()
	switch x := a.(type) {
	case json.Number:
		y, ok := b.(json.Number)
		if !ok {
			return false, rel
		}
		if x == y {
			return true, 0
		}
		// Integers compare exactly, whatever their size (a uint64
		// feature is beyond int64, and float64 cannot tell 2^53+1 from
		// 2^53).
		if xi, ok := new(big.Int).SetString(string(x), 10); ok {
			if yi, ok := new(big.Int).SetString(string(y), 10); ok {
				return xi.Cmp(yi) == 0, bigRelDiff(xi, yi)
			}
		}
		xf, errx := x.Float64()
		yf, erry := y.Float64()
		if errx != nil || erry != nil {
			return false, rel
		}
		d := relDiff(xf, yf)
		return d <= tol.rel || math.Abs(xf-yf) <= tol.abs, d
	case []any:
		y, ok := b.([]any)
		if !ok || len(x) != len(y) {
			return false, rel
		}
		equal = true
		for i := range x {
			eq, r := compare(x[i], y[i], tol)
			equal = equal && eq
			rel = maxRel(rel, r)
		}
		return equal, rel
	case map[string]any:
		y, ok := b.(map[string]any)
		if !ok || len(x) != len(y) {
			return false, rel
		}
		equal = true
		for k, xv := range x {
			yv, ok := y[k]
			if !ok {
				return false, rel
			}
			eq, r := compare(xv, yv, tol)
			equal = equal && eq
			rel = maxRel(rel, r)
		}
		return equal, rel
	}
	return a == b, rel
}

func relDiff(a, b float64) float64 {
	if a == b {
		return 0
	}
	d := math.Abs(a - b)
	m := max(math.Abs(a), math.Abs(b))
	return d / m
}

// bigRelDiff is relDiff of two integers, computed without rounding them
// to float64 first.
func bigRelDiff(a, b *big.Int) float64 {
	if a.Cmp(b) == 0 {
		return 0
	}
	d := new(big.Int).Sub(a, b)
	m := new(big.Int).Abs(a)
	if bm := new(big.Int).Abs(b); bm.Cmp(m) > 0 {
		m = bm
	}
	r, _ := new(big.Float).Quo(new(big.Float).SetInt(d.Abs(d)), new(big.Float).SetInt(m)).Float64()
	return r
}

func maxRel(a, b float64) float64 {
	switch {
	case math.IsNaN(a):
		return b
	case math.IsNaN(b):
		return a
	}
	return max(a, b)
}
