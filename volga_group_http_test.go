package volga_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	promtestutil "github.com/prometheus/client_golang/prometheus/testutil"
	kafkago "github.com/segmentio/kafka-go"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kmsg"
	"gocloud.dev/blob/memblob"

	"github.com/volga-go/volga"
	"github.com/volga-go/volga/request"
	"github.com/volga-go/volga/sink"
)

// A member asked for a key of a partition it does not own while the
// group's coordinator cannot say who owns it (DescribeGroups fails) has
// no answer yet: 503, try again, as during a rebalance. It is no fault
// of the request (400 told the client not to retry a lookup any other
// member would have answered).
func TestGroupLookupOwnerUnknown(t *testing.T) {
	const parts = 2
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(parts, "tx"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	addrs := c.ListenAddrs()
	produceGroup(t, addrs, "tx", 0, 48, &kafkago.Hash{}, volga.RawKey)
	bucket := memblob.OpenBucket(nil)
	defer bucket.Close()
	a := startGroup(t, groupQuery, rawKeyGroupConfig(addrs, "unknown-owner", bucket, "http://a.example:8080"))
	b := startGroup(t, groupQuery, rawKeyGroupConfig(addrs, "unknown-owner", bucket, "http://b.example:8080"))
	groupWaitFor(t, "the two members to share the partitions", 20*time.Second, func() bool {
		return ownership([]*runningGroup{a, b}, parts) && len(a.g.Owned()) == 1
	})
	// A user whose partition b owns.
	var key map[string]any
	for u := range groupUsers {
		k := map[string]any{"user_id": groupUser(u)}
		p, err := a.g.PartitionOf(k)
		if err != nil {
			t.Fatal(err)
		}
		if slices.Contains(b.g.Owned(), p) {
			key = k
			break
		}
	}
	if key == nil {
		t.Fatal("no user in b's partition")
	}

	var failing atomic.Bool
	failing.Store(true)
	c.ControlKey(kmsg.DescribeGroups.Int16(), func(req kmsg.Request) (kmsg.Response, error, bool) {
		c.KeepControl()
		if !failing.Load() {
			return nil, nil, false
		}
		dreq := req.(*kmsg.DescribeGroupsRequest)
		resp := dreq.ResponseKind().(*kmsg.DescribeGroupsResponse)
		resp.SetVersion(dreq.GetVersion())
		for _, id := range dreq.Groups {
			g := kmsg.NewDescribeGroupsResponseGroup()
			g.Group, g.ErrorCode = id, kerr.CoordinatorNotAvailable.Code
			resp.Groups = append(resp.Groups, g)
		}
		return resp, nil, true
	})

	ctx := context.Background()
	at := groupBase.Add(time.Minute)
	if _, err := a.g.Lookup(ctx, key, at, nil); err == nil || !errors.Is(err, request.ErrUnavailable) {
		t.Fatalf("Lookup while the coordinator does not answer: %v, want an error marked request.ErrUnavailable", err)
	}
	srv := httptest.NewServer(a.g.Handler())
	defer srv.Close()
	body := fmt.Sprintf(`{"key": {"user_id": %q}, "at": %q}`, key["user_id"], at.Format(time.RFC3339))
	resp, err := http.Post(srv.URL+"/v1/features", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable {
		t.Fatalf("HTTP lookup while the coordinator does not answer: status %d, want 503", resp.StatusCode)
	}

	// Once it answers again, the member names the owner.
	failing.Store(false)
	resp, err = http.Post(srv.URL+"/v1/features", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusMisdirectedRequest || resp.Header.Get("X-Volga-Owner") != "http://b.example:8080" {
		t.Fatalf("HTTP lookup once the coordinator answers: status %d, owner %q; want 421 naming b", resp.StatusCode, resp.Header.Get("X-Volga-Owner"))
	}
	// A key missing its column is the request's fault.
	resp, err = http.Post(srv.URL+"/v1/features", "application/json", strings.NewReader(`{"key": {"nope": 1}}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest {
		t.Fatalf("HTTP lookup of a key without its column: status %d, want 400", resp.StatusCode)
	}
}

// While a member starts the pipeline of a partition the group assigned
// to it (here: its sink takes a while to open), a lookup of a key of that
// partition is to be tried again (503), not redirected to the member
// itself (421 naming its own address, which a client following the
// redirect asks again and again).
func TestGroupLookupOwnPartitionStarting(t *testing.T) {
	const parts = 2
	addrs := newGroupCluster(t, parts, "tx")
	produceGroup(t, addrs, "tx", 0, 48, &kafkago.Hash{}, volga.RawKey)
	bucket := memblob.OpenBucket(nil)
	defer bucket.Close()
	opening, release := make(chan struct{}), make(chan struct{})
	var once atomic.Bool
	cfg := rawKeyGroupConfig(addrs, "starting", bucket, "http://a.example:8080")
	cfg.Sink = func(p int) (sink.Sink, error) {
		if p == 1 && once.CompareAndSwap(false, true) {
			close(opening)
			<-release
		}
		return sink.NewCollector(), nil
	}
	a := startGroup(t, groupQuery, cfg)
	select {
	case <-opening:
	case <-time.After(20 * time.Second):
		t.Fatal("partition 1's sink was not opened")
	}
	defer close(release)
	var key map[string]any
	for u := range groupUsers {
		k := map[string]any{"user_id": groupUser(u)}
		if p, err := a.g.PartitionOf(k); err != nil {
			t.Fatal(err)
		} else if p == 1 {
			key = k
			break
		}
	}
	if key == nil {
		t.Fatal("no user in partition 1")
	}
	at := groupBase.Add(time.Minute)
	_, err := a.g.Lookup(context.Background(), key, at, nil)
	var noe *volga.NotOwnerError
	if !errors.As(err, &noe) || noe.Partition != 1 || noe.Member != "" || noe.Owner != "" {
		t.Fatalf("Lookup of a key of the partition the member is starting: %v (%+v), want a NotOwnerError naming no owner", err, noe)
	}
	srv := httptest.NewServer(a.g.Handler())
	defer srv.Close()
	body := fmt.Sprintf(`{"key": {"user_id": %q}, "at": %q}`, key["user_id"], at.Format(time.RFC3339))
	resp, err := http.Post(srv.URL+"/v1/features", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable {
		t.Fatalf("HTTP lookup of a key of the partition the member is starting: status %d (owner %q), want 503",
			resp.StatusCode, resp.Header.Get("X-Volga-Owner"))
	}
}

// A key the lookup handler reads as an integer though written with a
// fraction or an exponent (42.0, as clients that hold ids as floats write
// them) is routed like 42: 421 naming its owner, not 503 (the router did
// not place it, and the member's own lookup found it was not the owner's:
// try again, for ever).
func TestGroupHandlerRoutesIntegerKeyWrittenAsFloat(t *testing.T) {
	const parts = 2
	addrs := newGroupCluster(t, parts, "tx")
	produceGroup(t, addrs, "tx", 0, 48, &kafkago.Hash{}, volga.RawKey)
	bucket := memblob.OpenBucket(nil)
	defer bucket.Close()
	const query = `SELECT id, ts, count(*) OVER w AS n FROM tx
		WINDOW w AS (PARTITION BY id ORDER BY ts RANGE BETWEEN INTERVAL '1' MINUTE PRECEDING AND CURRENT ROW)`
	a := startGroup(t, query, rawKeyGroupConfig(addrs, "float-keys", bucket, "http://a.example:8080"))
	b := startGroup(t, query, rawKeyGroupConfig(addrs, "float-keys", bucket, "http://b.example:8080"))
	groupWaitFor(t, "the two members to share the partitions", 20*time.Second, func() bool {
		return ownership([]*runningGroup{a, b}, parts) && len(a.g.Owned()) == 1
	})
	id := int64(-1)
	for i := range int64(100) {
		p, err := a.g.PartitionOf(map[string]any{"id": i})
		if err != nil {
			t.Fatal(err)
		}
		if slices.Contains(b.g.Owned(), p) {
			id = i
			break
		}
	}
	if id < 0 {
		t.Fatal("no id in b's partition")
	}
	srv := httptest.NewServer(a.g.Handler())
	defer srv.Close()
	for _, written := range []string{fmt.Sprint(id), fmt.Sprintf("%d.0", id), fmt.Sprintf("%de0", id)} {
		for _, body := range []string{
			fmt.Sprintf(`{"key": {"id": %s}, "at": 0}`, written),
			fmt.Sprintf(`[{"key": {"id": %s}, "at": 0}]`, written),
		} {
			status, b := post(t, srv.URL+request.FeaturesPath, body)
			if status != http.StatusMisdirectedRequest || !strings.Contains(string(b), `"owner":"http://b.example:8080"`) {
				t.Errorf("%s: status %d: %s; want 421 naming b", body, status, b)
			}
		}
	}
}

// A lookup of another member's partition asks the coordinator who owns
// it; a coordinator that takes the request and never answers makes the
// lookup give up (unavailable: 503, try again), not wait for ever with
// its goroutine and, over HTTP, its connection.
func TestGroupLookupOwnerHangs(t *testing.T) {
	const parts = 2
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(parts, "tx"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	addrs := c.ListenAddrs()
	produceGroup(t, addrs, "tx", 0, 48, &kafkago.Hash{}, volga.RawKey)
	bucket := memblob.OpenBucket(nil)
	defer bucket.Close()
	cfg := func(addr string) volga.GroupConfig {
		c := rawKeyGroupConfig(addrs, "owner-hangs", bucket, addr)
		c.CheckpointInterval = time.Hour // no fence asks the coordinator meanwhile
		return c
	}
	a := startGroup(t, groupQuery, cfg("http://a.example:8080"))
	b := startGroup(t, groupQuery, cfg("http://b.example:8080"))
	groupWaitFor(t, "the two members to share the partitions", 20*time.Second, func() bool {
		return ownership([]*runningGroup{a, b}, parts) && len(a.g.Owned()) == 1
	})
	var key map[string]any
	for u := range groupUsers {
		k := map[string]any{"user_id": groupUser(u)}
		if p, err := a.g.PartitionOf(k); err != nil {
			t.Fatal(err)
		} else if slices.Contains(b.g.Owned(), p) {
			key = k
			break
		}
	}
	if key == nil {
		t.Fatal("no user in b's partition")
	}
	release := make(chan struct{})
	var hung atomic.Int32
	c.ControlKey(kmsg.DescribeGroups.Int16(), func(kmsg.Request) (kmsg.Response, error, bool) {
		c.KeepControl()
		select {
		case <-release:
		default:
			hung.Add(1)
			c.SleepControl(func() { <-release })
		}
		return nil, nil, false
	})
	defer close(release) // before the members stop: their leaving asks too

	done := make(chan error, 1)
	go func() {
		_, err := a.g.Lookup(context.Background(), key, groupBase.Add(time.Minute), nil)
		done <- err
	}()
	select {
	case err := <-done:
		if !errors.Is(err, request.ErrUnavailable) {
			t.Fatalf("Lookup while the coordinator does not answer: %v, want an error marked request.ErrUnavailable", err)
		}
	case <-time.After(time.Minute):
		t.Fatalf("Lookup still waiting for a coordinator that does not answer after a minute (%d DescribeGroups held)", hung.Load())
	}
	if hung.Load() == 0 {
		t.Fatal("the lookup did not ask the coordinator")
	}
}

// A batch of lookups larger than a mebibyte (the handler allows 4 MiB
// here) whose last key another member owns is answered 421 naming it,
// and the handler's metrics count the 421s: the member routed bodies of
// up to a mebibyte, before its lookup handler and out of its metrics'
// sight, and left larger ones to the handler, which answered a 503 to
// retry here, for ever.
func TestGroupHandlerMisdirectedLargeBatch(t *testing.T) {
	const parts = 2
	addrs := newGroupCluster(t, parts, "tx")
	produceGroup(t, addrs, "tx", 0, 48, &kafkago.Hash{}, volga.RawKey)
	bucket := memblob.OpenBucket(nil)
	defer bucket.Close()
	a := startGroup(t, groupQuery, rawKeyGroupConfig(addrs, "large-batch", bucket, "http://a.example:8080"))
	b := startGroup(t, groupQuery, rawKeyGroupConfig(addrs, "large-batch", bucket, "http://b.example:8080"))
	groupWaitFor(t, "the two members to share the partitions", 20*time.Second, func() bool {
		return ownership([]*runningGroup{a, b}, parts) && len(a.g.Owned()) == 1
	})
	var mine, theirs string
	for u := range groupUsers {
		p, err := a.g.PartitionOf(map[string]any{"user_id": groupUser(u)})
		if err != nil {
			t.Fatal(err)
		}
		if slices.Contains(a.g.Owned(), p) {
			mine = groupUser(u)
		} else {
			theirs = groupUser(u)
		}
	}
	if mine == "" || theirs == "" {
		t.Fatal("no user in each member's partitions")
	}
	reg := prometheus.NewRegistry()
	m, err := request.NewMetrics(reg)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(a.g.Handler(request.WithMaxBodyBytes(4<<20), request.WithMetrics(m)))
	defer srv.Close()
	at := groupBase.Add(time.Minute).Format(time.RFC3339)
	one := func(user string) string { return fmt.Sprintf(`{"key": {"user_id": %q}, "at": %q}`, user, at) }
	var sb strings.Builder
	sb.WriteString("[")
	for sb.Len() < 1<<20+1000 {
		sb.WriteString(one(mine) + ",")
	}
	sb.WriteString(one(theirs) + "]")
	for _, body := range []string{one(theirs), sb.String()} {
		status, got := post(t, srv.URL+request.FeaturesPath, body)
		if status != http.StatusMisdirectedRequest || !strings.Contains(string(got), `"owner":"http://b.example:8080"`) {
			t.Errorf("%d-byte request: status %d: %.300s; want 421 naming b", len(body), status, got)
		}
	}
	if status, got := post(t, srv.URL+request.FeaturesPath, one(mine)); status != http.StatusOK {
		t.Errorf("a key of a's own: status %d: %s", status, got)
	}
	const want = `
# HELP volga_http_requests_total HTTP requests answered by the lookup handler, by path and status code.
# TYPE volga_http_requests_total counter
volga_http_requests_total{code="200",handler="/v1/features"} 1
volga_http_requests_total{code="421",handler="/v1/features"} 2
`
	if err := promtestutil.GatherAndCompare(reg, strings.NewReader(want), "volga_http_requests_total"); err != nil {
		t.Error(err)
	}
}
