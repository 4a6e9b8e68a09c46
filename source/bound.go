package source

// LowerBounder is implemented by bounded sources that know, from their
// metadata, a lower bound of the values a column takes in the rows not
// yet read, such as the row-group statistics of Parquet files.
//
// In batch mode the engine uses the bound of the event-time column to
// finish rows before the end of the input: every row earlier than the
// bound has seen all the rows its windows can hold, so its results are
// final, and it can be emitted and its memory freed once every row read
// before it can be too (output keeps input order). Input sorted by event
// time, or nearly (rows in arrival order, each a little late, in row
// groups that overlap in time by no more than that), is then processed in
// bounded memory. The results are the same as without the bound.
type LowerBounder interface {
	// LowerBound returns a value every row that later calls to Read
	// return holds in column col or above, or ok false when it knows
	// none (no statistics, or col is not an integer or timestamp
	// column). For a timestamp column the bound is in milliseconds since
	// the epoch, rounded down; for an int64 column it is the value
	// itself. Once every row has been read it returns math.MaxInt64.
	LowerBound(col string) (bound int64, ok bool)
}
