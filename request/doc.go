// Package request serves point-in-time feature lookups: request mode.
//
// In request mode an application asks, at the moment it must decide
// (score a transaction, rank a feed), for the features of one key as of
// one time: every windowed aggregate of a pipeline's query over the rows
// of that key in the frame a row at (key, time) would have, without that
// row (SPEC section 6). The answer comes from the live state of a running
// pipeline, or of one that has ingested a bounded input to its end, and
// equals what a batch run over the same rows computes for a row at that
// time. A request may carry a candidate row, counted in its own frame as
// if it had arrived but not stored.
//
// The package is the serving side only. It knows nothing about the
// engine: anything with a Lookup method and a list of key columns is a
// Service. Package volga adapts a *volga.Pipeline to it
// (Pipeline.Service, Pipeline.Handler), and the volga command serves one
// over HTTP (volga serve).
//
// # HTTP
//
// NewHandler serves a Service as JSON over HTTP:
//
//	POST /v1/features
//	{"key": {"user_id": 42}, "at": "2024-01-03T10:00:00Z"}
//
//	200 OK
//	{"key":{"user_id":42},"at":"2024-01-03T10:00:00Z","watermark":"2024-01-03T09:59:58Z",
//	 "features":{"spend_1h":12.5,"n_1h":3}}
//
// "key" gives a value for every key column (the query's PARTITION BY
// columns, matched case-insensitively) and nothing else. "at" is an RFC
// 3339 time, or a number of milliseconds since the Unix epoch (of a time
// in the years 0000 to 9999, as RFC 3339 writes them). "row",
// optional, is a candidate row: an object of source columns; the key
// columns and the event-time column it leaves out are the key's and
// "at", and others are refused. A JSON array
// of requests is answered by an array of results in the same order; if any
// element is wrong, the whole batch is refused.
//
// Features appear in the query's SELECT order with their JSON types:
// integers, floats (NaN and ±Inf as null), strings, booleans, null for
// SQL NULL, arrays for lists, objects for maps (keys rendered as strings)
// and structs, and RFC 3339 UTC strings for timestamps. A key without any
// rows gets the empty-frame values (count 0, sum null, ...), except at
// times whose frames reach the rows of keys the pipeline has forgotten
// (quiet keys, forgotten once many: see package window), which are
// answered as times older than the state kept.
//
// "watermark" tells how complete the answer is: rows with an event time
// at or before it are all counted; newer ones may still be on their way.
// It is null before the pipeline has seen any row, an RFC 3339 UTC time
// while it runs, and the string "+inf" once a bounded input has been
// ingested to its end (every row is counted).
//
// Errors are JSON objects {"error": "..."}: 400 for malformed JSON, a
// missing or unknown key column, a bad "at", a value of the wrong type or
// a time older than the state kept; 405 for a method other than POST; 413
// for a body over the limit (WithMaxBodyBytes, 1 MiB by default); 501
// when the service cannot answer lookups at all (a pipeline whose query has
// an UNBOUNDED PRECEDING frame, or no sliding window: the message names
// the window); 503, with Retry-After: 1, before the pipeline has started
// (or while the service is otherwise not ready); 500 for anything
// unexpected, including
// a panic in the Service, which is recovered. A lookup that fails because
// the client went away (its request's context was cancelled) is counted
// as 499 (StatusAborted), not as a 503 of the service's. A Service error
// that is a Responder writes its own answer instead (a volga.Group's 421
// Misdirected Request naming the member that owns a key). GET /healthz
// answers 200 "ok".
//
// # Online/offline consistency
//
// Check compares logged lookups (what was served) with the features
// recomputed offline for the same keys and times (volga.Recompute, which
// runs volga.Backfill over a spine built from the log) and reports how
// many values match. ReadLog reads a log in the response format above,
// one JSON object per line. The volga command runs the whole check:
// volga check.
package request
