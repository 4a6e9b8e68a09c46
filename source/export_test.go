package source

// SetPageDecoding turns the page decoder (pqPages) on or off, for tests
// that compare it with parquet/file's column chunk readers, and returns
// the previous setting. No source may be decoding meanwhile.
func SetPageDecoding(on bool) bool {
	old := !pqNoPages
	pqNoPages = !on
	return old
}

// SetSpillChunkRows sets how many rows a Clustered spill gathers before it
// writes them to its parts, until the returned function undoes it.
func SetSpillChunkRows(n int) (undo func()) {
	old := spillChunkRows
	spillChunkRows = n
	return func() { spillChunkRows = old }
}
