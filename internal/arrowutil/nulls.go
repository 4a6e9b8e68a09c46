package arrowutil

import (
	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
)

// CountNulls settles the null count of every column of rec and of their
// child arrays. Arrow computes an unknown null count (that of a slice, for
// one) on the first call of NullN and stores it in the array's shared
// data: done by two goroutines reading the same batch, that is a data
// race. A batch handed to several goroutines is settled first.
func CountNulls(rec arrow.RecordBatch) {
	for _, c := range rec.Columns() {
		countNulls(c.Data())
	}
}

func countNulls(d arrow.ArrayData) {
	if d.NullN() < 0 {
		a := array.MakeFromData(d)
		a.NullN()
		a.Release()
	}
	for _, c := range d.Children() {
		countNulls(c)
	}
	if d.DataType().ID() == arrow.DICTIONARY {
		countNulls(d.Dictionary())
	}
}
