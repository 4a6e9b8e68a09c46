package source

// SetPageDecoding turns the page decoder (pqPages) on or off, for tests
// that compare it with parquet/file's column chunk readers, and returns
// the previous setting. No source may be decoding meanwhile.
func SetPageDecoding(on bool) bool {
	old := !pqNoPages
	pqNoPages = !on
	return old
}
