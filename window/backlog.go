package window

// Backlog returns the number of rows waiting for the watermark and the
// number of keys they belong to. A batch run uses it, with KeysHeld and
// KeysCreated, to release rows in large enough steps: a release visits
// each key with rows waiting, and visiting a key costs about the same for
// one row as for ten (its state is cold in the CPU caches), so releasing
// a few rows per key at a time costs several times the CPU of releasing
// many (BenchmarkBatchRelease); and to see when waiting gains nothing,
// because nearly every new row brings a new key (keys that come and go,
// such as sessions, which would otherwise wait for the end, their quiet
// keys never let go). Call it from the goroutine that pushes.
func (o *Operator) Backlog() (rows, keys int) {
	return o.pend.n, o.nPendKeys
}

// KeysHeld returns the number of keys the operator holds: every key seen
// and not forgotten, with rows waiting or not, resident, evicted or
// parked. A batch run waits for a few rows per key held (see Backlog).
func (o *Operator) KeysHeld() int { return len(o.states) }

// KeysCreated returns the number of keys the operator has created so far:
// keys seen for the first time, or again after being forgotten. A batch
// run tells by it keys that come and go (sessions), whose rows each bring
// a new key, from keys spread evenly that come back. Call it from the
// goroutine that pushes.
func (o *Operator) KeysCreated() int64 { return o.keysCreated }

// retainedSample is the most keys RetainedPerKey looks at.
const retainedSample = 256

// RetainedPerKey estimates the mean number of rows a key's windows hold,
// from at most retainedSample keys spread evenly over the keys whose
// state is in memory (a cache miss each: cheap enough for every watermark
// of a batch run); 0 when there are none. Call it from the goroutine that
// pushes.
func (o *Operator) RetainedPerKey() float64 {
	n := len(o.states)
	step := max(n/retainedSample, 1)
	var rows, keys int
	for i := 0; i < n; i += step {
		ks := o.states[i]
		if ks == nil {
			continue // evicted to the store
		}
		rows += ks.rows.Len()
		if ks.edge != nil {
			rows += ks.edge.Len()
		}
		keys++
	}
	if keys == 0 {
		return 0
	}
	return float64(rows) / float64(keys)
}

// PerValueState reports whether a window of the operator keeps an entry
// per distinct value of its rows (agg.PerValue: count_distinct, top,
// topn_frequency, top1_ratio, the *_cate family), which makes a visit to
// a key cost several cache misses however few rows it brings.
func (o *Operator) PerValueState() bool { return o.perValue }
