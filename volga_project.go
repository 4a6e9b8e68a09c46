package volga

import (
	"github.com/apache/arrow-go/v18/arrow"

	"github.com/volga-go/volga/pipeline"
	"github.com/volga-go/volga/source"
)

// project narrows a source that can leave columns out (source.Projector,
// such as Parquet) to the columns the query uses, and returns the query
// compiled for them; it returns c unchanged when it does not apply.
//
// It applies to batch runs without a late-row sink, dead-letter handler or
// checkpoints: late rows and dead letters are written with every source
// column, and a checkpoint records the source's schema. A column is unused
// when the query compiles without it to the same output; the columns are
// found one by one and the result is compiled again, so nothing but the
// compiler decides what a query reads.
func project(plan *pipeline.Plan, src source.Source, c *pipeline.Compiled, cfg *config) *pipeline.Compiled {
	pr, ok := src.(source.Projector)
	run := cfg.run
	if !ok || run.Mode != pipeline.Batch || run.Late != nil || run.DeadLetters != nil || run.Checkpoints != nil || cfg.ckptURL != "" {
		return c
	}
	full := src.Schema()
	keep := make([]bool, full.NumFields())
	for i := range keep {
		keep[i] = true
	}
	dropped := 0
	for i := range keep {
		keep[i] = !compilesTo(plan, narrow(full, keep, i), cfg.eventTime, c.Output)
		if !keep[i] {
			dropped++
		}
	}
	if dropped == 0 || dropped == len(keep) {
		return c
	}
	schema := narrow(full, keep, -1)
	nc, err := pipeline.Compile(plan, schema, cfg.eventTime)
	if err != nil || !nc.Output.Equal(c.Output) {
		return c
	}
	names := make([]string, 0, schema.NumFields())
	for _, f := range schema.Fields() {
		names = append(names, f.Name)
	}
	if err := pr.Project(names); err != nil || !src.Schema().Equal(schema) {
		// The source keeps every column (Project leaves it as it was on
		// an error); a source narrowed otherwise than asked is refused
		// by Run's schema check.
		return c
	}
	return nc
}

// narrow returns full without the columns not kept and without column
// drop (-1: none).
func narrow(full *arrow.Schema, keep []bool, drop int) *arrow.Schema {
	var fields []arrow.Field
	for i, f := range full.Fields() {
		if keep[i] && i != drop {
			fields = append(fields, f)
		}
	}
	md := full.Metadata()
	return arrow.NewSchema(fields, &md)
}

// compilesTo reports whether plan compiles for schema to output.
func compilesTo(plan *pipeline.Plan, schema *arrow.Schema, eventTime string, output *arrow.Schema) bool {
	c, err := pipeline.Compile(plan, schema, eventTime)
	return err == nil && c.Output.Equal(output)
}
