package window

import (
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/volga-go/volga/agg"
)

// firstByteWindow is an agg.Window whose first byte is known.
type firstByteWindow struct{ b byte }

func (*firstByteWindow) Eval(*agg.Rows, []int64, []int64, []int64, array.Builder) {}

// valueWindow implements agg.Window by value (held indirectly by an
// interface).
type valueWindow struct{ b, c byte }

func (valueWindow) Eval(*agg.Rows, []int64, []int64, []int64, array.Builder) {}

func TestWarmWindowReadsTheWindowSafely(t *testing.T) {
	var typedNil *firstByteWindow
	cases := []struct {
		name string
		w    agg.Window
		want int64
	}{
		{"nil", nil, 0},
		{"typed nil pointer", typedNil, 0},
		{"pointer", &firstByteWindow{b: 42}, 42},
		{"value", valueWindow{b: 7, c: 9}, 7},
		{"library window", mustBind(t, "sum").NewWindow(), -1}, // any byte; no fault
	}
	for _, c := range cases {
		got := warmWindow(c.w)
		if c.want >= 0 && got != c.want {
			t.Errorf("%s: %d, want %d", c.name, got, c.want)
		}
	}
}

func mustBind(t *testing.T, name string) agg.Func {
	t.Helper()
	f, err := agg.Bind(name, []agg.Arg{{Type: arrow.PrimitiveTypes.Float64, Col: 0}})
	if err != nil {
		t.Fatal(err)
	}
	return f
}
