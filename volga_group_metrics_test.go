package volga_test

import (
	"regexp"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	kafkago "github.com/segmentio/kafka-go"
	"gocloud.dev/blob/memblob"

	"github.com/volga-go/volga"
)

// TestGroupMetrics: with WithMetrics, a member registers the pipeline of
// each partition it runs, as NAME-pNNNN, and only while it runs it. A
// member alone reports every partition and every event; once a second
// member joins, each registry holds exactly the partitions its member
// owns (the partitions a member kept were stopped and registered again,
// which a registration left behind would refuse), and the window keys of
// the partitions add up to the users.
func TestGroupMetrics(t *testing.T) {
	const (
		parts = 4
		total = 480
	)
	addrs := newGroupCluster(t, parts, "tx")
	produceGroup(t, addrs, "tx", 0, total, &kafkago.Hash{}, volga.RawKey)
	bucket := memblob.OpenBucket(nil)
	defer bucket.Close()
	cfg := rawKeyGroupConfig(addrs, "metrics", bucket, "")
	regA, regB := prometheus.NewPedanticRegistry(), prometheus.NewPedanticRegistry()
	a := startGroup(t, groupQuery, cfg, volga.WithMetrics(regA), volga.WithName("features"))
	groupWaitFor(t, "member a alone to read every event", 20*time.Second, func() bool {
		m := scrape(t, regA)
		return len(a.g.Owned()) == parts && sumMetric(m, "volga_source_rows_total") == total
	})
	if got := registeredParts(t, regA); !slices.Equal(got, []int{0, 1, 2, 3}) {
		t.Fatalf("member a alone: partitions registered %v, want all four", got)
	}
	if n := sumMetric(scrape(t, regA), "volga_window_keys"); n != groupUsers {
		t.Fatalf("member a alone: %v window keys, want %d users", n, groupUsers)
	}

	b := startGroup(t, groupQuery, cfg, volga.WithMetrics(regB), volga.WithName("features"))
	groupWaitFor(t, "each registry to hold its member's partitions", 30*time.Second, func() bool {
		if !ownership([]*runningGroup{a, b}, parts) || len(a.g.Owned()) != 2 {
			return false
		}
		return slices.Equal(registeredParts(t, regA), slices.Sorted(slices.Values(a.g.Owned()))) &&
			slices.Equal(registeredParts(t, regB), slices.Sorted(slices.Values(b.g.Owned())))
	})
	// The restored pipelines know their partitions' keys.
	groupWaitFor(t, "the keys of the four partitions to add up to the users", 20*time.Second, func() bool {
		return sumMetric(scrape(t, regA), "volga_window_keys")+sumMetric(scrape(t, regB), "volga_window_keys") == groupUsers
	})
	for _, reg := range []prometheus.Gatherer{regA, regB} {
		for k, v := range scrape(t, reg) {
			if metricName.FindString(k) == "volga_pipeline_running" && v != 1 {
				t.Errorf("%s = %v: a registered partition's pipeline is not running", k, v)
			}
		}
	}
}

var (
	metricName   = regexp.MustCompile(`^[a-z_]+`)
	pipelineName = regexp.MustCompile(`pipeline="features-p(\d{4})"`)
)

// sumMetric adds the values of every series of the metric name.
func sumMetric(m map[string]float64, name string) float64 {
	var sum float64
	for k, v := range m {
		if metricName.FindString(k) == name {
			sum += v
		}
	}
	return sum
}

// registeredParts returns the partitions whose pipelines reg holds, in
// order.
func registeredParts(t *testing.T, reg prometheus.Gatherer) []int {
	t.Helper()
	var out []int
	for k := range scrape(t, reg) {
		if metricName.FindString(k) != "volga_pipeline_running" {
			continue
		}
		m := pipelineName.FindStringSubmatch(k)
		if m == nil {
			t.Fatalf("series %s: want pipeline features-pNNNN", k)
		}
		p, _ := strconv.Atoi(m[1])
		out = append(out, p)
	}
	slices.Sort(out)
	return out
}
