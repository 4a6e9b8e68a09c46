//go:build volgaonly

package main

import (
	"context"
	"errors"
)

// withDuckDB reports whether this build links DuckDB. The build tagged
// volgaonly does not: the engines other than DuckDB run in it (see
// childBinary), so that their peak RSS is their own and not also that of
// DuckDB's library, which every process of the default build maps and
// initialises at start.
const withDuckDB = false

func runDuckDB(context.Context, config) (result, error) {
	return result{}, errNoDuckDB
}

func runDuckDBGroup(context.Context, config) (result, error) {
	return result{}, errNoDuckDB
}

var errNoDuckDB = errors.New("this build of the bench command has no DuckDB (built with -tags volgaonly)")
