package watermark_test

import (
	"fmt"
	"time"

	"github.com/volga-go/volga/watermark"
)

func Example() {
	// One generator per source partition, tolerating 5s of disorder.
	p0 := watermark.NewBounded(5 * time.Second)
	p1 := watermark.NewBounded(5 * time.Second)
	// The operator downstream takes the minimum of both partitions.
	c := watermark.NewCombiner(2)

	p0.Observe(time.Date(2024, 1, 3, 10, 0, 10, 0, time.UTC).UnixMilli())
	p1.Observe(time.Date(2024, 1, 3, 10, 0, 7, 0, time.UTC).UnixMilli())
	c.Update(0, p0.Current())
	c.Update(1, p1.Current())
	fmt.Println(watermark.Format(c.Current()))

	// Both partitions reach the end of their (bounded) input.
	p0.Finish()
	p1.Finish()
	c.Update(0, p0.Current())
	c.Update(1, p1.Current())
	fmt.Println(watermark.Format(c.Current()))
	// Output:
	// 2024-01-03T10:00:02Z
	// end
}
