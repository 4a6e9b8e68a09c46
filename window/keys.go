package window

import (
	"encoding/binary"
	"fmt"
	"math"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
)

// keyIndex gives every distinct key (the tuple of PARTITION BY values) a
// dense id. NULL is a key value of its own. A single integer or string key
// column takes a fast path; other keys are encoded to bytes.
type keyIndex struct {
	cols  []int
	ints  map[int64]int32
	strs  map[string]int32
	nullK int32 // id of the NULL key on the fast paths, -1 when unseen
	n     int32
	buf   []byte
	ids   []int32
}

func newKeyIndex(cols []int) *keyIndex {
	return &keyIndex{cols: cols, ints: map[int64]int32{}, strs: map[string]int32{}, nullK: -1}
}

// intern returns the key id of every row of rec (valid until the next
// call) and calls fresh(id, row) for every key seen for the first time.
func (k *keyIndex) intern(rec arrow.RecordBatch, fresh func(id int32, row int)) ([]int32, error) {
	n := int(rec.NumRows())
	if cap(k.ids) < n {
		k.ids = make([]int32, n)
	}
	ids := k.ids[:n]
	if len(k.cols) == 1 {
		switch a := rec.Column(k.cols[0]).(type) {
		case *array.Int64:
			v := a.Int64Values()
			for i := range ids {
				if a.IsNull(i) {
					ids[i] = k.null(fresh, i)
					continue
				}
				id, ok := k.ints[v[i]]
				if !ok {
					id = k.n
					k.n++
					k.ints[v[i]] = id
					fresh(id, i)
				}
				ids[i] = id
			}
			return ids, nil
		case *array.String:
			for i := range ids {
				if a.IsNull(i) {
					ids[i] = k.null(fresh, i)
					continue
				}
				s := a.Value(i)
				id, ok := k.strs[s]
				if !ok {
					id = k.n
					k.n++
					k.strs[string([]byte(s))] = id
					fresh(id, i)
				}
				ids[i] = id
			}
			return ids, nil
		}
	}
	cols := make([]arrow.Array, len(k.cols))
	for j, c := range k.cols {
		cols[j] = rec.Column(c)
	}
	for i := range ids {
		b := k.buf[:0]
		var err error
		for _, c := range cols {
			if b, err = appendKey(b, c, i); err != nil {
				return nil, err
			}
		}
		k.buf = b
		id, ok := k.strs[string(b)]
		if !ok {
			id = k.n
			k.n++
			k.strs[string(b)] = id
			fresh(id, i)
		}
		ids[i] = id
	}
	return ids, nil
}

func (k *keyIndex) null(fresh func(int32, int), row int) int32 {
	if k.nullK < 0 {
		k.nullK = k.n
		k.n++
		fresh(k.nullK, row)
	}
	return k.nullK
}

// appendKey appends a self-delimiting encoding of value i of a: a tag byte
// (0 for NULL) and the value.
func appendKey(b []byte, a arrow.Array, i int) ([]byte, error) {
	if a.IsNull(i) {
		return append(b, 0), nil
	}
	switch a := a.(type) {
	case *array.Int8:
		return binary.AppendVarint(append(b, 1), int64(a.Value(i))), nil
	case *array.Int16:
		return binary.AppendVarint(append(b, 1), int64(a.Value(i))), nil
	case *array.Int32:
		return binary.AppendVarint(append(b, 1), int64(a.Value(i))), nil
	case *array.Int64:
		return binary.AppendVarint(append(b, 1), a.Value(i)), nil
	case *array.Uint8:
		return binary.AppendUvarint(append(b, 2), uint64(a.Value(i))), nil
	case *array.Uint16:
		return binary.AppendUvarint(append(b, 2), uint64(a.Value(i))), nil
	case *array.Uint32:
		return binary.AppendUvarint(append(b, 2), uint64(a.Value(i))), nil
	case *array.Uint64:
		return binary.AppendUvarint(append(b, 2), a.Value(i)), nil
	case *array.Timestamp:
		return binary.AppendVarint(append(b, 3), int64(a.Value(i))), nil
	case *array.Date32:
		return binary.AppendVarint(append(b, 3), int64(a.Value(i))), nil
	case *array.Date64:
		return binary.AppendVarint(append(b, 3), int64(a.Value(i))), nil
	case *array.Boolean:
		if a.Value(i) {
			return append(b, 4, 1), nil
		}
		return append(b, 4, 0), nil
	case *array.Float64:
		return binary.BigEndian.AppendUint64(append(b, 5), canonFloat(a.Value(i))), nil
	case *array.Float32:
		return binary.BigEndian.AppendUint64(append(b, 5), canonFloat(float64(a.Value(i)))), nil
	case *array.String:
		s := a.Value(i)
		return append(binary.AppendUvarint(append(b, 6), uint64(len(s))), s...), nil
	case *array.LargeString:
		s := a.Value(i)
		return append(binary.AppendUvarint(append(b, 6), uint64(len(s))), s...), nil
	case *array.Binary:
		s := a.Value(i)
		return append(binary.AppendUvarint(append(b, 7), uint64(len(s))), s...), nil
	}
	return b, fmt.Errorf("window: PARTITION BY column of type %s is not supported", a.DataType())
}

func canonFloat(f float64) uint64 {
	if f == 0 {
		return 0
	}
	if f != f {
		return math.Float64bits(math.NaN())
	}
	return math.Float64bits(f)
}

// AppendKey appends a self-delimiting encoding of value i of a to b: the
// form in which keys are compared and hashed (for partitioning rows over
// parallel tasks). NULL has an encoding of its own.
func AppendKey(b []byte, a arrow.Array, i int) []byte {
	out, err := appendKey(b, a, i)
	if err != nil {
		return append(append(b, 9), a.ValueStr(i)...)
	}
	return out
}
