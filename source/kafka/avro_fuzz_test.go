package kafka

import (
	"fmt"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/hamba/avro/v2"
)

// FuzzAvroDecode: any bytes as a bare Avro value either decode to one
// row, appended to every column, or are refused with a reason and append
// nothing; never a panic. A value that decodes, encoded again from what
// hamba/avro read, decodes to the same row.
func FuzzAvroDecode(f *testing.F) {
	const text = `{"type":"record","name":"tx","fields":[
		{"name":"id","type":"long"},
		{"name":"user","type":"string"},
		{"name":"amount","type":["null","double"]},
		{"name":"tags","type":{"type":"array","items":"string"}},
		{"name":"attrs","type":{"type":"map","values":"long"}},
		{"name":"ts","type":{"type":"long","logicalType":"timestamp-millis"}}]}`
	av, err := newAvroValues(&Config{Format: FormatAvro, AvroSchema: text})
	if err != nil {
		f.Fatal(err)
	}
	schema, err := arrowSchemaOf(av.schema)
	if err != nil {
		f.Fatal(err)
	}
	dec, err := newDecoder(schema, "ts", "")
	if err != nil {
		f.Fatal(err)
	}
	dec.avro = av
	bld := array.NewRecordBuilder(memory.DefaultAllocator, dec.schema)
	defer bld.Release()
	dec.bind(bld)
	good, err := avro.Marshal(av.schema, map[string]any{"id": int64(7), "user": "ann", "amount": 2.5,
		"tags": []any{"a"}, "attrs": map[string]any{"k": int64(1)}, "ts": time.UnixMilli(1_700_000_000_000)})
	if err != nil {
		f.Fatal(err)
	}
	f.Add(good)
	f.Add(good[:len(good)-1])
	f.Add([]byte{})
	f.Add([]byte{0xfe, 0xff, 0xff, 0xff, 0x0f})
	f.Fuzz(func(t *testing.T, value []byte) {
		before := bld.Field(0).Len()
		err := dec.decode(value, time.Time{})
		for i := range dec.schema.NumFields() {
			want := before
			if err == nil {
				want++
			}
			if n := bld.Field(i).Len(); n != want {
				t.Fatalf("column %d has %d rows, want %d (decode error %v)", i, n, want, err)
			}
		}
		if err != nil {
			return
		}
		m, err := av.decode(value)
		if err != nil {
			t.Fatalf("decoded once, not twice: %v", err)
		}
		again, err := avro.Marshal(av.schema, m)
		if err != nil {
			t.Fatalf("re-encoding %v: %v", m, err)
		}
		m2, err := av.decode(again)
		if err != nil {
			t.Fatalf("re-encoded value does not decode: %v", err)
		}
		for k, v := range m {
			if a, b := anyText(v), anyText(m2[k]); a != b {
				t.Fatalf("field %s: %s, re-encoded %s", k, a, b)
			}
		}
	})
}

func anyText(v any) string {
	if tm, ok := v.(time.Time); ok {
		return tm.UTC().String()
	}
	return fmtAny(v)
}

func fmtAny(v any) string { return fmt.Sprintf("%#v", v) }
