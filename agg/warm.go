package agg

import (
	"unsafe"

	"github.com/volga-go/volga/internal/prefetch"
)

// Warm asks the CPU to bring into its caches, without waiting for it,
// memory that the next Eval of w reads first, so that an operator about
// to visit many keys' windows once each can overlap their cache misses
// with other work: at depth 0 the window itself (with the state that
// follows it in the same allocation), at depth 1 what the window points to
// (a deque's arrays), which reads the window and should be asked once
// depth 0 has had time to arrive. Windows of other packages, and nil, are
// left alone. Warm changes nothing.
func Warm(w Window, depth int) {
	if x, ok := w.(warmer); ok {
		x.warm(depth)
	}
}

// warmer is implemented by the windows of this package (see Warm).
type warmer interface {
	warm(depth int)
}

// warmWindowBytes is how much of a window Warm prefetches at depth 0: a
// retract window and the state it holds (ownRetractWindow).
const warmWindowBytes = 128

func (w *retractWindow) warm(depth int) {
	if depth == 0 {
		prefetch.Lines(unsafe.Pointer(w), warmWindowBytes)
	}
}

func (w *extremumWindow[T]) warm(depth int) {
	if depth == 0 {
		prefetch.Object(w)
		return
	}
	d := &w.a
	if n := len(d.rows); n > 0 {
		prefetch.Of(&d.rows[n-1])
		prefetch.Of(&d.rows[min(d.head, n-1)])
	}
	if n := len(d.vals); n > 0 {
		prefetch.Of(&d.vals[n-1])
	}
}

// warmSelf is the warm of a window whose Eval starts from its own fields:
// the window itself at depth 0, nothing further.
func warmSelf[T any](w *T, depth int) {
	if depth == 0 {
		prefetch.Object(w)
	}
}

func (w *countStarWindow) warm(depth int)  { warmSelf(w, depth) }
func (w *stackWindow) warm(depth int)      { warmSelf(w, depth) }
func (w *edgeWindow) warm(depth int)       { warmSelf(w, depth) }
func (w *percentileWindow) warm(depth int) { warmSelf(w, depth) }
func (w *ewAvgWindow) warm(depth int)      { warmSelf(w, depth) }
