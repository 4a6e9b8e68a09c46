package agg

import (
	"cmp"
	"strings"
)

// keyCmp returns a three-way comparison consistent with ops.less. For the
// common key types it is a direct comparison (one call, no double
// evaluation of less); other orders (floats keyed by their bits, bools)
// fall back to ops.less.
func keyCmp[K comparable](ops *valueOps[K]) func(a, b K) int {
	var f any
	switch o := any(ops).(type) {
	case *valueOps[int64]:
		if o == intOps {
			f = cmp.Compare[int64]
		}
	case *valueOps[uint64]:
		if o == uintOps {
			f = cmp.Compare[uint64]
		}
	case *valueOps[string]:
		if o == stringOps {
			f = strings.Compare
		}
	}
	if c, ok := f.(func(a, b K) int); ok {
		return c
	}
	less := ops.less
	return func(a, b K) int {
		switch {
		case less(a, b):
			return -1
		case less(b, a):
			return 1
		}
		return 0
	}
}
