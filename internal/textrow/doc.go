// Package textrow decodes rows of text into Arrow builders: the fields of
// a CSV line and the members of a JSON object. It holds the rules the
// text sources share (source's CSV and JSON-lines readers and the Kafka
// source), so that they read the same input the same way:
//
//   - [ScanObject] walks the members of a JSON object without building a
//     tree, handing each value over with its [Kind] and its text;
//   - [Classify], [Inferred] and [Inference] derive a schema from sampled
//     values (integers int64, other numbers float64, true/false bool,
//     date-times timestamp[ms] (see [ParseTime]), anything else string);
//   - [Column] parses values into a pending value for one schema field
//     and appends it only when asked, so a row that turns out to be a dead
//     letter leaves the builders untouched; [Decoder] does that for every
//     member of a JSON object;
//   - parse failures are [*ValueError] values, whose fields let each source
//     word its dead-letter reason.
package textrow
