//go:build race

package agg

func init() { raceEnabled = true }
