// Package volgatest runs Volga pipelines in-process inside Go tests, the
// way net/http/httptest runs HTTP handlers, so that an application can
// unit-test its own feature definitions.
//
// A test has three parts:
//
//   - events, given as a CSV literal (CSV, with the schema inferred exactly
//     like source.NewCSVReader does), as Go maps (Maps) or as rows with an
//     explicit Arrow schema (Table);
//   - a run of a pipeline, given as SQL text or a *pipeline.Builder, with
//     Run: in batch mode (the default), or in streaming mode with a bound
//     on out-of-orderness (Streaming) and a chosen arrival order (Arrival
//     for an exact permutation, Shuffled for a seeded random order that
//     stays within the bound); the Result keeps the finished pipeline, so
//     Result.Lookup answers point-in-time lookups after the ingest;
//   - a comparison with the expected features, Expect, which takes rows
//     as Go maps or as a CSV literal, compares floats within a relative
//     tolerance, and reports the first mismatching cells by row index, key
//     and column, plus missing and extra rows.
//
// Every helper takes a testing.TB and calls its Helper method, so failures
// point at the line of the test that called it. Setup errors (a bad query,
// an event that does not fit the schema) stop the test with Fatalf;
// mismatches are reported with Errorf so the test can carry on.
//
//	func TestSpend(t *testing.T) {
//		events := volgatest.CSV(`user_id,ts,amount
//	u1,2024-01-01T00:00:00Z,10
//	u1,2024-01-01T00:30:00Z,5`)
//		got := volgatest.Run(t, spendQuery, events,
//			volgatest.Streaming(time.Hour), volgatest.Shuffled("ts", time.Hour, 3))
//		volgatest.Expect(t, got, `user_id,ts,spend_1h
//	u1,2024-01-01T00:00:00Z,10
//	u1,2024-01-01T00:30:00Z,15`)
//	}
package volgatest
