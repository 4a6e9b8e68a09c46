package jsonvalue

import (
	"encoding/json"
	"math"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

func TestAppendStringEscapes(t *testing.T) {
	in := "tab\there\nnul\x00 \xff é \u2028 \"q\" \\ \r\x1f"
	want := "tab\there\nnul\x00 \ufffd é \u2028 \"q\" \\ \r\x1f"
	for _, got := range [][]byte{AppendString(nil, in), AppendString(nil, []byte(in))} {
		var back string
		if err := json.Unmarshal(got, &back); err != nil {
			t.Fatalf("%s: %v", got, err)
		}
		if back != want {
			t.Fatalf("round trip: got %q, want %q", back, want)
		}
	}
	if got := string(AppendString([]byte("x:"), "a\x01")); got != `x:"a\u0001"` {
		t.Fatalf("got %s", got)
	}
}

func TestAppendStringAllocs(t *testing.T) {
	s := []byte(strings.Repeat("héllo wörld \xff ", 20))
	dst := make([]byte, 0, 1024)
	if n := testing.AllocsPerRun(100, func() { AppendString(dst[:0], s) }); n != 0 {
		t.Fatalf("%v allocations for []byte", n)
	}
	str := string(s)
	if n := testing.AllocsPerRun(100, func() { AppendString(dst[:0], str) }); n != 0 {
		t.Fatalf("%v allocations for string", n)
	}
}

// FuzzAppendString checks that the output is valid JSON that reads back
// to the input, with invalid UTF-8 replaced as encoding/json replaces it.
func FuzzAppendString(f *testing.F) {
	for _, s := range []string{"", "plain", "q\"\\\n\t\x00", "\xff\xfe", "é\u2028😀", "\xed\xa0\x80"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got := AppendString(nil, s)
		if !json.Valid(got) {
			t.Fatalf("%q: invalid JSON %s", s, got)
		}
		var back string
		if err := json.Unmarshal(got, &back); err != nil {
			t.Fatal(err)
		}
		if want := replaceInvalid(s); back != want {
			t.Fatalf("%q: read back %q, want %q", s, back, want)
		}
		if got2 := AppendString(nil, []byte(s)); string(got2) != string(got) {
			t.Fatalf("%q: string %s, []byte %s", s, got, got2)
		}
	})
}

// replaceInvalid replaces each byte of s that is not part of valid UTF-8
// by U+FFFD.
func replaceInvalid(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b.WriteRune(utf8.RuneError)
		} else {
			b.WriteString(s[i : i+size])
		}
		i += size
	}
	return b.String()
}

func TestAppendFloat(t *testing.T) {
	for _, c := range []struct {
		f    float64
		bits int
		want string
	}{
		{0.1, 64, "0.1"},
		{float64(float32(0.1)), 32, "0.1"},
		{1e21, 64, "1e+21"},
		{-0.5, 64, "-0.5"},
		{math.NaN(), 64, "null"},
		{math.Inf(1), 32, "null"},
		{math.Inf(-1), 64, "null"},
	} {
		if got := string(AppendFloat(nil, c.f, c.bits)); got != c.want {
			t.Errorf("AppendFloat(%v, %d) = %s, want %s", c.f, c.bits, got, c.want)
		}
	}
}

func TestAppendTime(t *testing.T) {
	for _, c := range []struct {
		t    time.Time
		want string
	}{
		{time.Date(2024, 1, 3, 11, 0, 0, 0, time.FixedZone("CET", 3600)), "2024-01-03T10:00:00Z"},
		{time.Date(2024, 1, 3, 10, 0, 0, 5e8, time.UTC), "2024-01-03T10:00:00.5Z"},
		{time.UnixMilli(1).In(time.Local), "1970-01-01T00:00:00.001Z"},
	} {
		if got := string(AppendTime(nil, c.t)); got != c.want {
			t.Errorf("AppendTime(%v) = %s, want %s", c.t, got, c.want)
		}
	}
}
