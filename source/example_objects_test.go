package source_test

import (
	"context"
	"fmt"
	"io"

	"gocloud.dev/blob/memblob"

	"github.com/volga-go/volga/sink"
	"github.com/volga-go/volga/source"
)

// A bucket of gocloud.dev/blob is an fs.FS: WithFS reads inputs from it,
// here every CSV object under a prefix, in name order. Programs name such
// inputs by URL with OpenURL ("s3://bucket/events/?region=..."), which
// opens the bucket and closes it with the source.
func ExampleWithFS() {
	ctx := context.Background()
	bucket := memblob.OpenBucket(nil) // s3blob, gcsblob, azureblob alike
	defer bucket.Close()
	_ = bucket.WriteAll(ctx, "events/2024-01-03.csv", []byte("user,amount\nalice,12.5\n"), nil)
	_ = bucket.WriteAll(ctx, "events/2024-01-04.csv", []byte("user,amount\nbob,3\nalice,1\n"), nil)

	src, err := source.Open("events", source.WithFS(bucket))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer src.Close()
	for {
		rec, err := src.Read(ctx)
		if err == io.EOF {
			break
		}
		if err != nil {
			fmt.Println(err)
			return
		}
		fmt.Println(sink.Rows(rec))
		rec.Release()
	}
	// Output:
	// [[alice 12.5]]
	// [[bob 3] [alice 1]]
}
