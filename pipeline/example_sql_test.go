package pipeline_test

import (
	"fmt"

	"github.com/volga-go/volga/pipeline"
)

func ExampleParseSQL() {
	plan, err := pipeline.ParseSQL(`
SELECT user_id, ts,
       sum(amount) OVER w1h AS spend_1h,
       count(*)    OVER (PARTITION BY user_id ORDER BY ts
                         RANGE BETWEEN INTERVAL '1' DAY PRECEDING AND CURRENT ROW
                         EXCLUDE CURRENT ROW) AS n_before_1d
FROM tx
WHERE amount > 0
WINDOW w1h AS (PARTITION BY user_id ORDER BY ts
               RANGE BETWEEN INTERVAL '1' HOUR PRECEDING AND CURRENT ROW)`)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("table:", plan.Table, "where:", plan.Where.Text)
	for _, it := range plan.Items {
		if it.Agg != nil {
			fmt.Printf("%s = %s over %v BY %s: %s\n", it.Name, it.Agg.Text, it.Agg.Window.PartitionBy, it.Agg.Window.OrderBy, it.Agg.Window.Frame)
		} else {
			fmt.Printf("%s = %s\n", it.Name, it.Expr.Text)
		}
	}

	_, err = pipeline.ParseSQL("SELECT sum(amount) OVER w2 FROM tx\nWINDOW w AS (PARTITION BY user_id ORDER BY ts)")
	fmt.Println(err)
	// Output:
	// table: tx where: amount > 0
	// user_id = user_id
	// ts = ts
	// spend_1h = sum(amount) over [user_id] BY ts: RANGE BETWEEN INTERVAL '3600000' MILLISECOND PRECEDING AND CURRENT ROW
	// n_before_1d = count(*) over [user_id] BY ts: RANGE BETWEEN INTERVAL '86400000' MILLISECOND PRECEDING AND CURRENT ROW EXCLUDE CURRENT ROW
	// sql: unknown window "w2" at line 1, column 25 (near "w2")
}
