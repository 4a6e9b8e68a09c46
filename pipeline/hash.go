package pipeline

import (
	"encoding/binary"
	"slices"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/volga-go/volga/window"
)

// hashBytes hashes an encoded key for partitioning. Unlike hash/maphash it
// has no per-process seed: a key must go to the same task in every run, as
// checkpointed window state is restored task by task (statestore/FORMAT.md,
// "Operator state"). Changing it breaks restores from older checkpoints.
func hashBytes(b []byte) uint64 {
	h := uint64(len(b)) * 0x9e3779b97f4a7c15
	for len(b) >= 8 {
		h = mix64(h ^ binary.LittleEndian.Uint64(b))
		b = b[8:]
	}
	var tail uint64
	for i, c := range b {
		tail |= uint64(c) << (8 * i)
	}
	return mix64(h ^ tail ^ 0xd6e8feb86659fd93)
}

// mix64 is a 64-bit finalizer (splitmix64) spreading integer keys.
func mix64(x uint64) uint64 {
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	x ^= x >> 31
	return x
}

// keyHasher hashes key tuples for partitioning: the task of a row is
// hash % tasks. Its buffers are reused from call to call.
type keyHasher struct {
	buf []byte
	hs  []uint64
	idx []int32
	// all is 0, 1, 2, ...: every row of a batch (runner.taskRows).
	all []int32
}

// hash returns the hash of row i's key tuple. A single int64 key hashes
// its value (NULL: 0); any other key the bytes window.AppendKey encodes.
func (k *keyHasher) hash(cols []arrow.Array, i int) uint64 {
	if len(cols) == 1 {
		if a, ok := cols[0].(*array.Int64); ok {
			if a.IsNull(i) {
				return 0
			}
			return mix64(uint64(a.Value(i)))
		}
	}
	b := k.buf[:0]
	for _, c := range cols {
		b = window.AppendKey(b, c, i)
	}
	k.buf = b
	return hashBytes(b)
}

// hashRows returns hash(cols, i) of every row i < rows, in a buffer the
// next call reuses. A single int64 key column is hashed straight from its
// values.
func (k *keyHasher) hashRows(cols []arrow.Array, rows int) []uint64 {
	hs := slices.Grow(k.hs[:0], rows)[:rows]
	k.hs = hs
	if len(cols) == 1 {
		if a, ok := cols[0].(*array.Int64); ok {
			for i, x := range a.Int64Values()[:rows] {
				hs[i] = mix64(uint64(x))
			}
			if a.NullN() > 0 {
				for i := range hs {
					if a.IsNull(i) {
						hs[i] = 0
					}
				}
			}
			return hs
		}
	}
	for i := range hs {
		hs[i] = k.hash(cols, i)
	}
	return hs
}

// rowsOf appends to dst the rows (of rows) whose key goes to task p of n.
func (k *keyHasher) rowsOf(dst []int32, cols []arrow.Array, rows, p, n int) []int32 {
	want, m := uint64(p), uint64(n)
	if len(cols) == 1 {
		if a, ok := cols[0].(*array.Int64); ok && a.NullN() == 0 {
			// Through k.idx: rowsOfInt64 needs room for every row, and dst
			// is kept as long as the rows are (PushRows).
			k.idx = rowsOfInt64(k.idx[:0], a.Int64Values()[:rows], want, m)
			return append(dst, k.idx...)
		}
	}
	for i, h := range k.hashRows(cols, rows) {
		if h%m == want {
			dst = append(dst, int32(i))
		}
	}
	return dst
}

// rowsOfInt64 is rowsOf for a single int64 key column without NULLs: one
// pass hashing each value, with a mask instead of a division when n is a
// power of two (h%n is the same then), writing every row number and
// advancing past it only when the row is the task's, so that the
// unpredictable half of the rows costs no mispredicted branch.
func rowsOfInt64(dst []int32, vals []int64, want, m uint64) []int32 {
	start := len(dst)
	dst = slices.Grow(dst, len(vals))[:start+len(vals)]
	out := dst[start:]
	c := 0
	if m&(m-1) == 0 {
		mask := m - 1
		for i, x := range vals {
			out[c] = int32(i)
			c += b2i(mix64(uint64(x))&mask == want)
		}
	} else {
		for i, x := range vals {
			out[c] = int32(i)
			c += b2i(mix64(uint64(x))%m == want)
		}
	}
	return dst[:start+c]
}

// b2i is 1 for true, 0 for false (compiled without a branch).
func b2i(b bool) int {
	var i int
	if b {
		i = 1
	}
	return i
}

// partRows splits the rows (of rows) over n tasks: idx[p] lists the rows of
// task p in order.
func (k *keyHasher) partRows(cols []arrow.Array, rows, n int) [][]int32 {
	idx := make([][]int32, n)
	m := uint64(n)
	for i, h := range k.hashRows(cols, rows) {
		p := h % m
		idx[p] = append(idx[p], int32(i))
	}
	return idx
}
