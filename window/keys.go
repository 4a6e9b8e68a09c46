package window

import (
	"encoding/binary"
	"fmt"
	"math"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/volga-go/volga/internal/inttable"
	"github.com/volga-go/volga/internal/values"
)

// keyIndex gives every distinct key (the tuple of PARTITION BY values) a
// dense id. NULL is a key value of its own. A single integer or string key
// column takes a fast path; other keys are encoded to bytes.
type keyIndex struct {
	cols  []int
	ints  inttable.Table
	strs  map[string]int32
	nullK int32 // id of the NULL key on the fast paths, -1 when unseen
	// fastInt and fastStr record which fast path the single key column
	// took (its Arrow type decides), so lookups use the same map.
	fastInt, fastStr bool
	n                int32
	buf              []byte
	ids              []int32
}

func newKeyIndex(cols []int) *keyIndex {
	return &keyIndex{cols: cols, strs: map[string]int32{}, nullK: -1}
}

// intern returns the key id of every row of rec (valid until the next
// call) and calls fresh(id, row) for every key seen for the first time.
func (k *keyIndex) intern(rec arrow.RecordBatch, fresh func(id int32, row int)) ([]int32, error) {
	return k.internRows(rec, nil, fresh)
}

// internRows is intern of the rows sel of rec (all of them when sel is
// nil): ids[j] is the key id of row sel[j], and fresh gets rows of rec.
func (k *keyIndex) internRows(rec arrow.RecordBatch, sel []int32, fresh func(id int32, row int)) ([]int32, error) {
	n := int(rec.NumRows())
	if sel != nil {
		n = len(sel)
	}
	if cap(k.ids) < n {
		k.ids = make([]int32, n)
	}
	ids := k.ids[:n]
	row := func(j int) int { return j }
	if sel != nil {
		row = func(j int) int { return int(sel[j]) }
	}
	if len(k.cols) == 1 {
		switch a := rec.Column(k.cols[0]).(type) {
		case *array.Int64:
			k.fastInt = true
			v := a.Int64Values()
			nulls := a.NullN() > 0
			for j := range ids {
				i := j
				if sel != nil {
					i = int(sel[j])
				}
				if nulls && a.IsNull(i) {
					ids[j] = k.null(fresh, i)
					continue
				}
				id, ok := k.ints.Get(v[i])
				if !ok {
					id = k.n
					k.n++
					k.ints.Put(v[i], id)
					fresh(id, i)
				}
				ids[j] = id
			}
			return ids, nil
		case *array.String:
			k.fastStr = true
			for j := range ids {
				i := row(j)
				if a.IsNull(i) {
					ids[j] = k.null(fresh, i)
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
				ids[j] = id
			}
			return ids, nil
		}
	}
	cols := make([]arrow.Array, len(k.cols))
	for j, c := range k.cols {
		cols[j] = rec.Column(c)
	}
	for j := range ids {
		i := row(j)
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
		ids[j] = id
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

// EncodeKeyValues encodes a key given as Go values, one per key column of
// the given types, exactly as AppendKey encodes the same values read from
// Arrow arrays; nil is NULL. Values follow package values' rules: integers
// of any Go type (or whole floats, as JSON gives them), numbers for float
// columns, strings, booleans, for timestamps a time.Time, an RFC 3339
// string or epoch milliseconds, for dates a "2006-01-02" string or such a
// time (its UTC date), and for binary columns a []byte or a string of the
// bytes.
func EncodeKeyValues(b []byte, types []arrow.DataType, vals []any) ([]byte, error) {
	if len(types) != len(vals) {
		return nil, fmt.Errorf("window: key has %d values, want %d", len(vals), len(types))
	}
	for j, dt := range types {
		v := vals[j]
		if v == nil {
			b = append(b, 0)
			continue
		}
		switch dt.ID() {
		case arrow.INT8, arrow.INT16, arrow.INT32, arrow.INT64:
			n, ok := values.Int64(v)
			if !ok {
				return nil, fmt.Errorf("window: key value %v (%T) is not an integer", v, v)
			}
			b = binary.AppendVarint(append(b, 1), n)
		case arrow.UINT8, arrow.UINT16, arrow.UINT32, arrow.UINT64:
			u, ok := values.Uint64(v)
			if !ok {
				return nil, fmt.Errorf("window: key value %v (%T) is not an unsigned integer", v, v)
			}
			b = binary.AppendUvarint(append(b, 2), u)
		case arrow.TIMESTAMP:
			tm, err := values.Time(v)
			if err != nil {
				return nil, fmt.Errorf("window: key value: %w", err)
			}
			b = binary.AppendVarint(append(b, 3), values.Units(tm, dt.(*arrow.TimestampType).Unit))
		case arrow.BOOL:
			x, ok := v.(bool)
			if !ok {
				return nil, fmt.Errorf("window: key value %v (%T) is not a boolean", v, v)
			}
			if x {
				b = append(b, 4, 1)
			} else {
				b = append(b, 4, 0)
			}
		case arrow.FLOAT32, arrow.FLOAT64:
			f, ok := values.Float64(v)
			if !ok {
				return nil, fmt.Errorf("window: key value %v (%T) is not a number", v, v)
			}
			if dt.ID() == arrow.FLOAT32 {
				// The column holds float32s: 0.1 is the key float32(0.1).
				f = float64(float32(f))
			}
			b = binary.BigEndian.AppendUint64(append(b, 5), canonFloat(f))
		case arrow.STRING, arrow.LARGE_STRING:
			s, ok := v.(string)
			if !ok {
				return nil, fmt.Errorf("window: key value %v (%T) is not a string", v, v)
			}
			b = append(binary.AppendUvarint(append(b, 6), uint64(len(s))), s...)
		case arrow.DATE32, arrow.DATE64:
			days, err := values.Days(v)
			if err != nil {
				return nil, fmt.Errorf("window: key value: %w", err)
			}
			if dt.ID() == arrow.DATE64 {
				days *= values.MillisPerDay
			}
			b = binary.AppendVarint(append(b, 3), days)
		case arrow.BINARY:
			var s string
			switch x := v.(type) {
			case []byte:
				s = string(x)
			case string:
				s = x
			default:
				return nil, fmt.Errorf("window: key value %v (%T) is not bytes (a []byte, or a string of them)", v, v)
			}
			b = append(binary.AppendUvarint(append(b, 7), uint64(len(s))), s...)
		default:
			return nil, fmt.Errorf("window: PARTITION BY column of type %s is not supported", dt)
		}
	}
	return b, nil
}

// find returns the id of an encoded key (as EncodeKeyValues makes it).
func (k *keyIndex) find(enc []byte) (int32, bool) {
	if len(enc) == 1 && enc[0] == 0 && len(k.cols) == 1 && (k.fastInt || k.fastStr) {
		return k.nullK, k.nullK >= 0
	}
	if len(k.cols) == 1 && len(enc) > 0 && enc[0] == 1 && k.fastInt {
		v, n := binary.Varint(enc[1:])
		if n <= 0 {
			return 0, false
		}
		return k.ints.Get(v)
	}
	if len(k.cols) == 1 && len(enc) > 0 && enc[0] == 6 && k.fastStr {
		_, n := binary.Uvarint(enc[1:])
		if n <= 0 {
			return 0, false
		}
		id, ok := k.strs[string(enc[1+n:])]
		return id, ok
	}
	id, ok := k.strs[string(enc)]
	return id, ok
}
