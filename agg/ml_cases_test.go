package agg

func mlCases() []aggCase { return nil }
func mlBenchCases() []struct {
	name string
	fn   string
	args []Arg
} {
	return nil
}
