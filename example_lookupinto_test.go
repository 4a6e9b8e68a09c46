package volga_test

import (
	"context"
	"fmt"
	"time"

	"github.com/volga-go/volga"
	"github.com/volga-go/volga/source"
)

// A scoring service keeps one FeatureRow (and key map) per goroutine and
// reads numeric features unboxed: such lookups allocate nothing.
func ExamplePipeline_LookupInto() {
	rec := transactions()
	defer rec.Release()
	p, err := volga.SQL(`
SELECT user_id, sum(amount) OVER w AS spend_1h, count(*) OVER w AS n_1h
FROM tx
WINDOW w AS (PARTITION BY user_id ORDER BY ts
             RANGE BETWEEN INTERVAL '1' HOUR PRECEDING AND CURRENT ROW)`,
		volga.WithSource("tx", source.NewMemory(rec.Schema(), rec)),
		volga.WithMode(volga.Streaming))
	if err != nil {
		fmt.Println(err)
		return
	}
	ctx := context.Background()
	if err := p.Run(ctx); err != nil {
		fmt.Println(err)
		return
	}
	var f volga.FeatureRow
	key := map[string]any{"user_id": int64(1)}
	spend, n := -1, -1
	for _, minute := range []int64{80, 130, 200} {
		if err := p.LookupInto(ctx, &f, key, time.UnixMilli(minute*60_000), nil); err != nil {
			fmt.Println(err)
			return
		}
		if spend < 0 {
			spend, n = f.Index("spend_1h"), f.Index("n_1h")
		}
		count, _ := f.Int64(n)
		if f.IsNull(spend) {
			fmt.Printf("minute %d: spend_1h=NULL n_1h=%d\n", minute, count)
			continue
		}
		s, _ := f.Float64(spend)
		fmt.Printf("minute %d: spend_1h=%g n_1h=%d\n", minute, s, count)
	}
	// Output:
	// minute 80: spend_1h=115 n_1h=2
	// minute 130: spend_1h=100 n_1h=1
	// minute 200: spend_1h=NULL n_1h=0
}
