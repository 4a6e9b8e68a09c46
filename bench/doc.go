// Package bench holds the differential tests that check the volga engine
// against DuckDB (the oracle), and, in its sub-packages and cmd/bench, the
// benchmark workloads of BENCHMARKS.md. It is a module of its own so that
// the library's go.mod never carries cgo or DuckDB. See README.md.
package bench
