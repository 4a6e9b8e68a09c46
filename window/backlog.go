package window

// Backlog returns the number of rows waiting for the watermark and the
// number of keys the operator has seen. A batch run uses it to release
// rows in large enough steps: visiting a key costs about the same for one
// row as for ten (its state is cold in the CPU caches), so releasing a
// few rows per key at a time costs several times the CPU of releasing
// many (BenchmarkBatchRelease). Call it from the goroutine that pushes.
func (o *Operator) Backlog() (rows, keys int) {
	return o.pend.n, len(o.states)
}
