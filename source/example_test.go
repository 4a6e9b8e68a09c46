package source_test

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/volga-go/volga/sink"
	"github.com/volga-go/volga/source"
)

func Example() {
	const data = `user,amount,ts
alice,12.5,2024-01-03T10:00:00Z
bob,oops,2024-01-03T10:00:01Z
alice,3,2024-01-03T10:00:02Z
`
	src, err := source.NewCSVReader(strings.NewReader(data),
		source.WithSampleRows(1), // infer from the first row only
		source.WithDeadLetter(func(d source.DeadLetter) {
			fmt.Printf("dead letter at line %d: %s\n", d.Offset, d.Reason)
		}))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer src.Close()
	fmt.Println(src.Schema())
	for {
		rec, err := src.Read(context.Background())
		if err == io.EOF {
			break
		}
		if err != nil {
			fmt.Println(err)
			return
		}
		for _, row := range sink.Rows(rec) {
			fmt.Println(row...)
		}
		rec.Release()
	}
	fmt.Println("rejected:", src.DeadLetters())
	// Output:
	// schema:
	//   fields: 3
	//     - user: type=utf8, nullable
	//     - amount: type=float64, nullable
	//     - ts: type=timestamp[ms, tz=UTC], nullable
	// dead letter at line 3: column "amount": cannot parse "oops" as float64
	// alice 12.5 2024-01-03 10:00:00 +0000 UTC
	// alice 3 2024-01-03 10:00:02 +0000 UTC
	// rejected: 1
}

// Transactions in time order, read clustered by user: each user's rows
// together, the users in the order of their first rows, each user's rows
// in time order.
func ExampleNewClustered() {
	const data = `user,amount,ts
bob,5,2024-01-03T10:00:00Z
alice,12.5,2024-01-03T10:00:01Z
bob,7,2024-01-03T10:00:02Z
carol,1,2024-01-03T10:00:03Z
alice,3,2024-01-03T10:00:04Z
`
	csv, err := source.NewCSVReader(strings.NewReader(data), source.WithBatchSize(2))
	if err != nil {
		fmt.Println(err)
		return
	}
	src, err := source.NewClustered(csv, []string{"user"})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer src.Close()
	for {
		rec, err := src.Read(context.Background())
		if err == io.EOF {
			break
		}
		if err != nil {
			fmt.Println(err)
			return
		}
		for _, row := range sink.Rows(rec) {
			fmt.Println(row[0], row[1])
		}
		rec.Release()
	}
	// Output:
	// bob 5
	// bob 7
	// alice 12.5
	// alice 3
	// carol 1
}

// A day's events per CSV file, read as one source in name order: the
// schema comes from the first file, and each file's header may order the
// columns its own way.
func ExampleNewCSVFiles() {
	dir, err := os.MkdirTemp("", "events")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer os.RemoveAll(dir)
	days := map[string]string{
		"2024-01-01.csv": "user,amount,ts\nalice,12.5,2024-01-01T10:00:00Z\n",
		"2024-01-02.csv": "ts,user,amount\n2024-01-02T09:30:00Z,bob,3\n2024-01-02T11:00:00Z,alice,7\n",
	}
	for name, body := range days {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			fmt.Println(err)
			return
		}
	}
	// source.Open(dir) or source.Open(dir + "/*.csv") does the same.
	src, err := source.NewCSVFiles([]string{filepath.Join(dir, "2024-01-*.csv")})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer src.Close()
	fmt.Println(len(src.Files()), "files")
	for {
		rec, err := src.Read(context.Background())
		if err == io.EOF {
			break
		}
		if err != nil {
			fmt.Println(err)
			return
		}
		for _, row := range sink.Rows(rec) {
			fmt.Println(row...)
		}
		rec.Release()
	}
	// Output:
	// 2 files
	// alice 12.5 2024-01-01 10:00:00 +0000 UTC
	// bob 3 2024-01-02 09:30:00 +0000 UTC
	// alice 7 2024-01-02 11:00:00 +0000 UTC
}
