package window

// SetChunkRows sets the rows of o's result chunks (0: the default), so
// that tests cover releases of several chunks.
func SetChunkRows(o *Operator, n int) { o.chunkRows = n }
