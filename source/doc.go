// Package source defines where pipeline input comes from and provides the
// standard sources.
//
// A [Source] is pull-based: the engine's goroutine calls Read for the next
// Arrow record batch until io.EOF (bounded sources) and releases every
// batch it gets. Replayable sources also implement [Seeker], whose opaque
// positions are stored in checkpoints.
//
// The sources here:
//
//   - [Memory]: batches held in memory (tests, examples, request-time
//     backfills), optionally re-sliced to a maximum batch size;
//   - [CSV] and [JSONL]: text files (plain, or compressed with gzip as
//     .gz or zstd as .zst) or readers, with the schema inferred from a
//     sample of rows or given with [WithSchema];
//   - [Parquet]: one or more Parquet files read in order;
//   - [TextFiles]: several CSV or JSON-lines files read in order, as one
//     source ([NewCSVFiles], [NewJSONLFiles]);
//   - [Open]: picks one of them from a path's extension, or from the
//     files of a directory or glob pattern;
//   - [OpenURL]: the same for objects in object storage
//     ("s3://bucket/events/*.parquet"), read through gocloud.dev/blob;
//     [WithFS] makes any of the file sources read an fs.FS (a
//     *blob.Bucket among them) instead of local files;
//   - [Clustered]: the rows of another bounded source, read whole and
//     ordered by key (each key's rows in input order), for batch runs
//     that go key by key (volga.WithClusterInput).
//
// Text sources never stop on a bad row: a row that does not decode (a bad
// number, a wrong field count, invalid JSON, text that is not UTF-8 where
// a string goes) is counted, handed to the [DeadLetterFunc] given with
// [WithDeadLetter] with its line number and the reason, and reading
// continues.
//
// Inferred types, the same rules for CSV and JSON lines: integers are
// int64, decimals float64 (int and float mixed is float64, and so are
// CSV's NaN and Inf among numbers), true/false are bool, date-times
// (RFC 3339, or 2006-01-02 15:04:05[.fff] as SQL tools and pandas write
// them, read as UTC) are timestamp[ms] in UTC, and everything else — including
// any other mix of types, and a column seen only as NULL — is string. A
// column made a string by a few odd values says which and where
// (InferenceNote). An empty CSV field (quoted or not), a JSON null and a
// missing JSON key are NULL; the CSV sink writes an empty string as an
// empty field too, so it reads back as NULL.
package source
