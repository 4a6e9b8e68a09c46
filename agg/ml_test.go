package agg

import "testing"

func TestMLAggregates(t *testing.T) { runCases(t, mlCases()) }
