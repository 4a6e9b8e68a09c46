package agg

// Warm reads, without changing anything, memory that the next Eval of w
// reads first, so that an operator about to visit many keys' windows once
// each can start their cache misses early and overlap them with other
// work: at depth 0 the window itself, at depth 1 what the window points to
// (a deque's arrays), to be asked once depth 0 has had time to arrive. It
// returns a value of no meaning, for the caller to keep somewhere so that
// the reads are not optimised away. Windows of other packages, and nil,
// are not read.
func Warm(w Window, depth int) int64 {
	if x, ok := w.(warmer); ok {
		return x.warm(depth)
	}
	return 0
}

// warmer is implemented by the windows of this package (see Warm).
type warmer interface {
	warm(depth int) int64
}

func (w *retractWindow) warm(depth int) int64 {
	if depth == 0 {
		return w.n // the states of ownRetractWindow follow in the same object
	}
	return 0
}

func (w *extremumWindow[T]) warm(depth int) int64 {
	if depth == 0 {
		return w.a.hi
	}
	d := &w.a
	var t int64
	if n := len(d.rows); n > 0 {
		t = d.rows[n-1] + d.rows[min(d.head, n-1)]
	}
	if n := len(d.vals); n > 0 {
		switch v := any(&d.vals[n-1]).(type) {
		case *float64:
			t += int64(*v)
		case *int64:
			t += *v
		case *uint64:
			t += int64(*v)
		case *string:
			t += int64(len(*v))
		}
	}
	return t
}

func (w *countStarWindow) warm(depth int) int64 {
	if depth == 0 && w.none {
		return 1
	}
	return 0
}

func (w *stackWindow) warm(depth int) int64 {
	if depth == 0 && w.a != nil {
		return 1
	}
	return 0
}

func (w *edgeWindow) warm(depth int) int64 {
	if depth == 0 {
		return w.hi
	}
	return 0
}

func (w *percentileWindow) warm(depth int) int64 {
	if depth == 0 {
		return w.hi
	}
	return 0
}

func (w *ewAvgWindow) warm(depth int) int64 {
	if depth == 0 {
		return w.next
	}
	return 0
}
