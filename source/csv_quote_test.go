package source_test

import (
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/volga-go/volga/source"
)

// TestCSVOpenQuote: a quote left open no longer swallows the lines after
// it. A record of several lines that does not parse (the quote runs to
// the end of the input, or to a stray quote further down) is a dead
// letter of its first line only, and reading goes on at the line after
// it; a field that legitimately spans lines still reads as one. Reading
// resumes at every position Position gave.
func TestCSVOpenQuote(t *testing.T) {
	var b strings.Builder
	b.WriteString("id,name\n")
	var want [][]any
	line := int64(2)
	wantDead := map[int64]string{}
	for i := range 40 {
		switch i {
		case 5:
			b.WriteString("\"5,open quote to the end of the next field\n")
			wantDead[line] = `"5,open quote to the end of the next field`
		case 12:
			fmt.Fprintf(&b, "%d,\"two\nlines\"\n", i) // legitimately two lines
			want = append(want, []any{int64(i), "two\nlines"})
			line++
		case 20:
			b.WriteString("\"20,stray\n")
			wantDead[line] = `"20,stray`
		case 21, 22:
			fmt.Fprintf(&b, "%d,n%d\n", i, i) // inside line 20's quote: read again
			want = append(want, []any{int64(i), fmt.Sprintf("n%d", i)})
		case 23:
			b.WriteString("x\"y,23\n") // ends line 20's record badly, a bare quote on its own
			wantDead[line] = `x"y,23`
		case 30:
			b.WriteString("\"30,\"open at the very end\n")
			wantDead[line] = `"30,"open at the very end`
		default:
			fmt.Fprintf(&b, "%d,n%d\n", i, i)
			want = append(want, []any{int64(i), fmt.Sprintf("n%d", i)})
		}
		line++
	}
	b.WriteString("\"99,unclosed at the end of the input")
	wantDead[line] = `"99,unclosed at the end of the input`
	path := writeFile(t, "quotes.csv", b.String())

	var dead []source.DeadLetter
	opts := []source.Option{source.WithBatchSize(3), collectDead(&dead)}
	src, err := source.NewCSV(path, opts...)
	if err != nil {
		t.Fatal(err)
	}
	got, marks := readMarked(t, src)
	src.Close()
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("rows\n%v\nwant\n%v", got, want)
	}
	gotDead := map[int64]string{}
	for _, d := range dead {
		gotDead[d.Offset] = string(d.Raw)
	}
	if !reflect.DeepEqual(gotDead, wantDead) {
		t.Fatalf("dead letters (line: raw)\n%v\nwant\n%v", gotDead, wantDead)
	}
	for _, m := range marks {
		again, err := source.NewCSV(path, opts[:1]...)
		if err != nil {
			t.Fatal(err)
		}
		if err := again.Seek(m.pos); err != nil {
			t.Fatal(err)
		}
		rest, _ := readMarked(t, again)
		again.Close()
		if len(rest)+m.read != len(want) || (len(rest) > 0 && !reflect.DeepEqual(rest, want[m.read:])) {
			t.Fatalf("resumed after %d rows: %v, want %v", m.read, rest, want[m.read:])
		}
	}
}
