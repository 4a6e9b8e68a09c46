package main

import (
	"fmt"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
)

// schemaUsage is the help text of --schema, shared by the commands that
// read a --source.
const schemaUsage = "the column types of the --source input, `COL:TYPE,...` (e.g. user_id:bigint,ts:timestamp,amount:double), instead of types inferred from its first 1000 rows, so that a malformed value among them is a dead letter rather than a column read as text; TYPE is bigint, double, varchar, boolean, timestamp or date (or int64, float64, string, bool, date32); CSV and JSON-lines files and Kafka topics only, with the columns the query uses"

// schemaFlag is --schema: the schema of the --source input, given
// rather than inferred from the first rows. Inference reads a column
// as utf8 when one sampled value is not of the column's type (a typo in
// a column of numbers), and the query then fails on that column's type;
// with the schema given, such a value is a dead letter like any other.
type schemaFlag struct {
	text   string
	schema *arrow.Schema
}

// schemaTypes are the types --schema accepts: the names of the dialect's
// CAST and Arrow's, as decoded by the text and Kafka sources (timestamps
// in milliseconds, UTC, as inference gives them).
var schemaTypes = map[string]arrow.DataType{
	"bigint":    arrow.PrimitiveTypes.Int64,
	"int64":     arrow.PrimitiveTypes.Int64,
	"integer":   arrow.PrimitiveTypes.Int64,
	"int":       arrow.PrimitiveTypes.Int64,
	"double":    arrow.PrimitiveTypes.Float64,
	"float64":   arrow.PrimitiveTypes.Float64,
	"float":     arrow.PrimitiveTypes.Float64,
	"varchar":   arrow.BinaryTypes.String,
	"string":    arrow.BinaryTypes.String,
	"utf8":      arrow.BinaryTypes.String,
	"text":      arrow.BinaryTypes.String,
	"boolean":   arrow.FixedWidthTypes.Boolean,
	"bool":      arrow.FixedWidthTypes.Boolean,
	"timestamp": &arrow.TimestampType{Unit: arrow.Millisecond, TimeZone: "UTC"},
	"date":      arrow.FixedWidthTypes.Date32,
	"date32":    arrow.FixedWidthTypes.Date32,
}

// String returns the flag as given.
func (f *schemaFlag) String() string {
	if f == nil {
		return ""
	}
	return f.text
}

// Set parses COL:TYPE,... into the schema.
func (f *schemaFlag) Set(v string) error {
	if f.schema != nil {
		return fmt.Errorf("given twice; list every column in one --schema")
	}
	var fields []arrow.Field
	seen := map[string]bool{}
	for _, part := range strings.Split(v, ",") {
		part = strings.TrimSpace(part)
		name, typ, ok := strings.Cut(part, ":")
		name, typ = strings.TrimSpace(name), strings.TrimSpace(typ)
		if !ok || name == "" || typ == "" {
			return fmt.Errorf("want COL:TYPE,..., e.g. user_id:bigint,ts:timestamp,amount:double; %q is not COL:TYPE", part)
		}
		dt, ok := schemaTypes[strings.ToLower(typ)]
		if !ok {
			return fmt.Errorf("column %q: unknown type %q; use bigint, double, varchar, boolean, timestamp or date", name, typ)
		}
		if seen[strings.ToLower(name)] {
			return fmt.Errorf("column %q given twice", name)
		}
		seen[strings.ToLower(name)] = true
		fields = append(fields, arrow.Field{Name: name, Type: dt, Nullable: true})
	}
	f.text, f.schema = v, arrow.NewSchema(fields, nil)
	return nil
}

// cliSchemaHint rewords the library's advice to give a source's schema
// in Go (source.WithSchema) as the flag that does it from the command
// line.
func cliSchemaHint(msg string) string {
	return strings.ReplaceAll(msg, "(source.WithSchema)", "(--schema COL:TYPE,...)")
}
