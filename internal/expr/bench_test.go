package expr

import (
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// BenchmarkEval evaluates the typed operator loops (checked integer
// arithmetic, division, DuckDB's float comparison) and a CASE on a batch
// of 65 536 rows, a tenth NULL, and reports the time per row.
func BenchmarkEval(b *testing.B) {
	const n = 1 << 16
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "a", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
		{Name: "b", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
		{Name: "x", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
		{Name: "y", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
	}, nil)
	rb := array.NewRecordBuilder(memory.DefaultAllocator, schema)
	defer rb.Release()
	for i := 0; i < n; i++ {
		valid := i%10 != 0
		rb.Field(0).(*array.Int64Builder).AppendValues([]int64{int64(i)}, []bool{valid})
		rb.Field(1).(*array.Int64Builder).AppendValues([]int64{int64(i%97 - 48)}, nil)
		rb.Field(2).(*array.Float64Builder).AppendValues([]float64{float64(i) / 3}, []bool{valid})
		rb.Field(3).(*array.Float64Builder).AppendValues([]float64{float64(i%89) * 1.5}, nil)
	}
	rec := rb.NewRecordBatch()
	defer rec.Release()
	for _, s := range []string{"a + b", "a * b", "a % b", "x / y", "x < y", "CASE WHEN b > 0 THEN a ELSE b END"} {
		ast, err := ParseExpr(s)
		if err != nil {
			b.Fatal(err)
		}
		e, err := Compile(ast, schema)
		if err != nil {
			b.Fatal(err)
		}
		b.Run(s, func(b *testing.B) {
			for b.Loop() {
				out, err := e.Eval(rec)
				if err != nil {
					b.Fatal(err)
				}
				out.Release()
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/n, "ns/row")
		})
	}
}
