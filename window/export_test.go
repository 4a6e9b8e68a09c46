package window

// SetChunkRows sets the rows of o's result chunks (0: the default), so
// that tests cover releases of several chunks.
func SetChunkRows(o *Operator, n int) { o.chunkRows = n }

// SetGroupCompactMin sets the least number of keys a GROUP BY operator
// forgets at once, until the returned function undoes it.
func SetGroupCompactMin(n int) (undo func()) {
	old := groupCompactMin
	groupCompactMin = n
	return func() { groupCompactMin = old }
}

// GroupKeys returns the number of keys g holds and the number it forgot.
func GroupKeys(g *GroupOperator) (held int, forgotten int64) {
	return int(g.keys.n), g.forgotten
}

// DisableQuietSweep turns o's sweep of quiet keys off, so that tests can
// compare with it.
func DisableQuietSweep(o *Operator) { o.sweepable = false }

// SetKeyForgetMin sets the least number of parked keys o forgets at once
// (maybeForgetKeys), so that tests forget keys often.
func SetKeyForgetMin(o *Operator, n int) { o.forgetMin = n }

// SetGroupRuns turns the run-at-a-time emission of finished clustered
// keys' tumbling windows on or off, until the returned function undoes
// it.
func SetGroupRuns(on bool) (undo func()) {
	old := runsOff
	runsOff = !on
	return func() { runsOff = old }
}

// SetNextBatchID sets the id o gives the next batch pushed, so that tests
// reach the end of the ids' range.
func SetNextBatchID(o *Operator, id int32) { o.nextID = id }
