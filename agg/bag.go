package agg

import (
	"encoding/binary"
	"math"
	"slices"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
)

// floatKeyOps keys float values by their canonical bits (see canonFloat),
// so that -0 and 0, and all NaNs, are one key and keys are comparable.
var floatKeyOps = &valueOps[uint64]{
	get:  func(c *Column, i int) uint64 { return canonFloat(c.F64[i]) },
	less: func(a, b uint64) bool { return floatLess(math.Float64frombits(a), math.Float64frombits(b)) },
	put:  func(b array.Builder, v uint64) { appendFloat(b, math.Float64frombits(v)) },
	enc:  func(dst []byte, v uint64) []byte { return binary.LittleEndian.AppendUint64(dst, v) },
	dec: func(d *decoder) uint64 {
		f := d.float()
		if canonFloat(f) != math.Float64bits(f) {
			d.err = errCorrupt
		}
		return math.Float64bits(f)
	},
}

// keyKind selects the key representation of a column type for the
// value-keyed aggregates (top, topn_frequency, _cate ...).
type keyKind uint8

const (
	keyInt keyKind = iota
	keyUint
	keyFloat
	keyString
	keyBool
)

func keyKindOf(dt arrow.DataType, k Kind) keyKind {
	switch {
	case k == KindInt64 && isUnsigned64(dt):
		return keyUint
	case k == KindInt64:
		return keyInt
	case k == KindFloat64:
		return keyFloat
	case k == KindString:
		return keyString
	}
	return keyBool
}

// bag counts the multiplicities of distinct keys.
type bag[K comparable] struct {
	ops    *valueOps[K]
	counts map[K]int64
	total  int64
}

// add changes the multiplicity of k by delta and returns the old and new
// multiplicities.
func (b *bag[K]) add(k K, delta int64) (int64, int64) {
	if b.counts == nil {
		b.counts = make(map[K]int64)
	}
	old := b.counts[k]
	n := max(old+delta, 0)
	if n == 0 {
		delete(b.counts, k)
	} else {
		b.counts[k] = n
	}
	b.total += n - old
	return old, n
}

func (b *bag[K]) reset() {
	clear(b.counts)
	b.total = 0
}

// sortedKeys returns the keys in ascending order.
func (b *bag[K]) sortedKeys() []K {
	keys := make([]K, 0, len(b.counts))
	for k := range b.counts {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(x, y K) int {
		switch {
		case b.ops.less(x, y):
			return -1
		case b.ops.less(y, x):
			return 1
		}
		return 0
	})
	return keys
}

// appendBinary encodes the bag as (key, count) pairs in key order.
func (b *bag[K]) appendBinary(out []byte) []byte {
	keys := b.sortedKeys()
	out = binary.AppendUvarint(out, uint64(len(keys)))
	for _, k := range keys {
		out = b.ops.enc(out, k)
		out = binary.AppendVarint(out, b.counts[k])
	}
	return out
}

// decode reads an encoding of appendBinary, calling add for each pair.
func decodeBag[K comparable](d *decoder, ops *valueOps[K], add func(k K, n int64)) {
	n := d.count(2)
	seen := make(map[K]struct{}, n)
	for range n {
		k := ops.dec(d)
		c := d.varint()
		if d.err != nil {
			return
		}
		if _, dup := seen[k]; dup || c <= 0 {
			d.err = errCorrupt
			return
		}
		seen[k] = struct{}{}
		add(k, c)
	}
}

// constInt checks that a is an integer constant >= 1.
func constPositiveInt(d *Def, a Arg, what string) (int, error) {
	if !a.IsConst {
		return 0, sigError(d, "%s must be a constant", what)
	}
	v, ok := a.Const.(int64)
	if !ok || v <= 0 || v > 1<<20 {
		return 0, sigError(d, "%s must be an integer between 1 and %d, got %v", what, 1<<20, a.Const)
	}
	return int(v), nil
}

// constFloat checks that a is a numeric constant and returns it.
func constFloat(d *Def, a Arg, what string) (float64, error) {
	if !a.IsConst {
		return 0, sigError(d, "%s must be a constant", what)
	}
	switch v := a.Const.(type) {
	case int64:
		return float64(v), nil
	case float64:
		return v, nil
	}
	return 0, sigError(d, "%s must be a number, got %v", what, a.Const)
}
