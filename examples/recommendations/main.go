// Recommendations computes per-user interest features from click events
// and serves them over HTTP, as a ranking service would query them.
//
// The clicks come from a deterministic generator (500 clicks of four
// users over 36 hours). The example runs the pipeline over them, then
// serves its state with Pipeline.Handler on a listener it starts on
// 127.0.0.1 (a free port), and queries it with a small HTTP client. Run it
// with
//
//	go run ./examples/recommendations
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"time"

	"github.com/volga-go/volga"
	"github.com/volga-go/volga/source"
)

// featuresSQL holds the features, over each user's clicks of the last
// day: their three most clicked items, their clicks per category, and
// the share of their clicks that went to their top category (how focused
// they are).
const featuresSQL = `
SELECT user_id, ts, item, category,
       topn_frequency(item, 3)    OVER last_day AS top_items,
       count_cate(item, category) OVER last_day AS clicks_by_category,
       top1_ratio(category)       OVER last_day AS top_category_share
FROM clicks
WINDOW last_day AS (PARTITION BY user_id ORDER BY ts
                    RANGE BETWEEN INTERVAL '1' DAY PRECEDING AND CURRENT ROW)`

// lookupRequest is the body of POST /v1/features: the key, the time, and
// optionally a candidate row (a click being considered, counted as if it
// had happened).
type lookupRequest struct {
	Key map[string]any `json:"key"`
	At  time.Time      `json:"at"`
	Row map[string]any `json:"row,omitempty"`
}

// queryOffset is how long after the last click the service is queried.
const queryOffset = time.Minute

func main() {
	if err := run(context.Background(), os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "recommendations:", err)
		os.Exit(1)
	}
}

// run computes the features, serves them, queries them and writes the
// answers to w.
func run(ctx context.Context, w io.Writer) error {
	clicks := defaultClicks()
	batches := clickBatches(clicks, 50)
	p, err := volga.SQL(featuresSQL,
		volga.WithSource("clicks", source.NewMemory(clickSchema, batches...)),
		volga.WithMode(volga.Streaming),
	)
	if err != nil {
		return err
	}
	// The source is bounded: Run ingests every click and returns. The
	// finished pipeline keeps its window state and answers lookups (a
	// live deployment would run it in a goroutine over Kafka and serve
	// while it runs).
	if err := p.Run(ctx); err != nil {
		return err
	}
	fmt.Fprintf(w, "ingested %d clicks of %d users\n", p.Stats().RowsIn, len(users))

	// Serve the lookups on a free loopback port.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: p.Handler(), ReadHeaderTimeout: 5 * time.Second}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	defer func() {
		srv.Shutdown(context.Background())
		if err := <-served; !errors.Is(err, http.ErrServerClosed) {
			fmt.Fprintln(w, "server:", err)
		}
	}()
	url := "http://" + ln.Addr().String() + "/v1/features"
	fmt.Fprintln(w, "serving lookups at POST /v1/features on a loopback port")

	// One lookup per user as of a minute after the last click, then one
	// with a candidate click: how ana's features would look if she opened
	// item-07 now.
	at := clicks[len(clicks)-1].TS.Add(queryOffset)
	reqs := make([]lookupRequest, 0, len(users)+1)
	for _, u := range users {
		reqs = append(reqs, lookupRequest{Key: map[string]any{"user_id": u}, At: at})
	}
	reqs = append(reqs, lookupRequest{
		Key: map[string]any{"user_id": "ana"}, At: at,
		Row: map[string]any{"user_id": "ana", "item": "item-07", "category": itemCategory(7), "ts": at},
	})
	client := &http.Client{Timeout: 5 * time.Second}
	for _, r := range reqs {
		body, err := post(ctx, client, url, r)
		if err != nil {
			return err
		}
		req, _ := json.Marshal(r)
		fmt.Fprintf(w, "\n> %s\n< %s\n", req, body)
	}
	return nil
}

// post sends one lookup and returns the JSON answer.
func post(ctx context.Context, client *http.Client, url string, r lookupRequest) ([]byte, error) {
	body, err := json.Marshal(r)
	if err != nil {
		return nil, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	answer, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("lookup %s: %s: %s", body, resp.Status, answer)
	}
	return bytes.TrimSpace(answer), nil
}
