// Package duck wraps the DuckDB Go driver for the benchmarks and the oracle
// tests: opening an in-memory database, loading Arrow record batches into a
// table and reading query results back as canonical rows.
//
// DuckDB is used through database/sql and the Appender only, so no build
// tags (such as duckdb_arrow) are needed.
package duck

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"fmt"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/duckdb/duckdb-go/v2"

	"github.com/volga-go/volga/bench/internal/rows"
)

// DB is an in-memory DuckDB database.
type DB struct {
	// SQL is the database/sql handle; every query goes through it.
	SQL       *sql.DB
	connector *duckdb.Connector
}

// Open opens an in-memory DuckDB database. threads > 0 sets DuckDB's
// worker thread count; 0 keeps DuckDB's default (all cores).
func Open(threads int) (*DB, error) {
	dsn := ""
	if threads > 0 {
		dsn = fmt.Sprintf("?threads=%d", threads)
	}
	c, err := duckdb.NewConnector(dsn, nil)
	if err != nil {
		return nil, fmt.Errorf("duckdb: open: %w", err)
	}
	db := sql.OpenDB(c)
	// One connection: the appender and the queries must see the same
	// in-memory catalog, and a single connection keeps that obvious.
	db.SetMaxOpenConns(1)
	return &DB{SQL: db, connector: c}, nil
}

// Close closes the database.
func (d *DB) Close() error {
	err := d.SQL.Close()
	if cerr := d.connector.Close(); err == nil {
		err = cerr
	}
	return err
}

// duckType maps an Arrow type to the DuckDB column type used for it.
func duckType(t arrow.DataType) (string, error) {
	switch t.ID() {
	case arrow.INT64:
		return "BIGINT", nil
	case arrow.INT32:
		return "INTEGER", nil
	case arrow.FLOAT64:
		return "DOUBLE", nil
	case arrow.FLOAT32:
		return "FLOAT", nil
	case arrow.STRING, arrow.LARGE_STRING:
		return "VARCHAR", nil
	case arrow.BOOL:
		return "BOOLEAN", nil
	case arrow.TIMESTAMP:
		return "TIMESTAMP", nil
	}
	return "", fmt.Errorf("duckdb: no column type for Arrow type %s", t)
}

// LoadRecords creates table (replacing any table of that name) with the
// columns of schema and appends every row of recs through the Appender.
func (d *DB) LoadRecords(ctx context.Context, table string, schema *arrow.Schema, recs []arrow.RecordBatch) error {
	cols := make([]string, schema.NumFields())
	for i, f := range schema.Fields() {
		typ, err := duckType(f.Type)
		if err != nil {
			return fmt.Errorf("column %q: %w", f.Name, err)
		}
		cols[i] = fmt.Sprintf("%q %s", f.Name, typ)
	}
	ddl := fmt.Sprintf("CREATE OR REPLACE TABLE %q (%s)", table, strings.Join(cols, ", "))
	if _, err := d.SQL.ExecContext(ctx, ddl); err != nil {
		return fmt.Errorf("duckdb: %s: %w", ddl, err)
	}
	conn, err := d.SQL.Conn(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	return conn.Raw(func(dc any) error {
		app, err := duckdb.NewAppenderFromConn(dc.(driver.Conn), "", table)
		if err != nil {
			return fmt.Errorf("duckdb: appender: %w", err)
		}
		vals := make([]driver.Value, schema.NumFields())
		for _, rec := range recs {
			for r := 0; r < int(rec.NumRows()); r++ {
				for c := range vals {
					vals[c] = appendValue(rec.Column(c), r)
				}
				if err := app.AppendRow(vals...); err != nil {
					app.Close()
					return fmt.Errorf("duckdb: append: %w", err)
				}
			}
		}
		return app.Close()
	})
}

// appendValue converts one Arrow cell to a value the Appender accepts.
func appendValue(col arrow.Array, i int) driver.Value {
	if col.IsNull(i) {
		return nil
	}
	switch a := col.(type) {
	case *array.Timestamp:
		unit := a.DataType().(*arrow.TimestampType).Unit
		return a.Value(i).ToTime(unit).UTC()
	}
	return rows.Canonical(rows.ArrowValue(col, i))
}

// Query runs query and returns its column names and rows, every value in
// the canonical form of package rows.
func (d *DB) Query(ctx context.Context, query string) ([]string, [][]any, error) {
	rs, err := d.SQL.QueryContext(ctx, query)
	if err != nil {
		return nil, nil, fmt.Errorf("duckdb: %w\nquery: %s", err, query)
	}
	defer rs.Close()
	names, err := rs.Columns()
	if err != nil {
		return nil, nil, err
	}
	var out [][]any
	for rs.Next() {
		row := make([]any, len(names))
		ptrs := make([]any, len(names))
		for i := range row {
			ptrs[i] = &row[i]
		}
		if err := rs.Scan(ptrs...); err != nil {
			return nil, nil, err
		}
		for i, v := range row {
			row[i] = rows.Canonical(v)
		}
		out = append(out, row)
	}
	return names, out, rs.Err()
}

// Exec runs a statement that returns no rows.
func (d *DB) Exec(ctx context.Context, stmt string) error {
	if _, err := d.SQL.ExecContext(ctx, stmt); err != nil {
		return fmt.Errorf("duckdb: %w\nstatement: %s", err, stmt)
	}
	return nil
}
