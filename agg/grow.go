package agg

import "github.com/apache/arrow-go/v18/arrow/array"

// growAheadMinRows is the number of rows a list builder must hold before
// growAhead extrapolates from them.
const growAheadMinRows = 64

// growAhead prepares entries, the entry builder of the list or map
// builder parent (which has just taken the current row), for n more
// entries, and strs, when it is the string builder of a field of the
// entries, for their bytes. Without help, entries would double its
// buffers from small, copying them at every step (about a fifth of
// topn_frequency's time in BenchmarkML3). When entries must grow and the
// caller reserved more rows in parent than it holds, entries grows at
// once to what the reserved rows will need at the rate of entries a row
// so far, and strs to as many bytes at its rate of bytes an entry (both
// with 1/16 to spare, and exactly: Reserve would round the entries up to
// a power of two, all of it zero-filled), if that is more than doubling;
// otherwise the builders grow as they do. Only the capacities change,
// never what is appended.
func growAhead(parent, entries array.Builder, n int, strs array.Builder) {
	l, c := entries.Len(), entries.Cap()
	if l+n <= c {
		return
	}
	rows, total := parent.Len(), parent.Cap()
	if rows < growAheadMinRows || total <= rows {
		return
	}
	est := (l + n) * total / rows
	if est <= 2*c {
		return
	}
	est += est / 16
	entries.Resize(est)
	if sb, ok := strs.(*array.StringBuilder); ok && l > 0 {
		bytes := sb.DataLen() * est / l
		if bytes > sb.DataCap() {
			sb.ReserveData(bytes - sb.DataLen())
		}
	}
}
