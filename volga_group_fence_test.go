package volga_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	kafkago "github.com/segmentio/kafka-go"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/volga-go/volga"
	"github.com/volga-go/volga/sink"
	"github.com/volga-go/volga/source/kafka"
)

// checkpointLog records when a member's checkpoints completed, and
// their ids.
type checkpointLog struct {
	mu    sync.Mutex
	times []time.Time
	ids   []string
}

func (l *checkpointLog) add(i volga.CheckpointInfo) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.times = append(l.times, time.Now())
	l.ids = append(l.ids, i.ID)
}

// manifestWatch records the id and creation time of every manifest that
// appears under a file:// bucket's directory, polling it until stopped:
// retention deletes old checkpoints, and a member without the fence
// would delete newer ones, so a look at the end would miss some.
type manifestWatch struct {
	mu      sync.Mutex
	created map[string]time.Time // manifest id -> Manifest.Created
	stop    chan struct{}
	done    chan struct{}
}

func watchManifests(t *testing.T, dir string) *manifestWatch {
	w := &manifestWatch{created: map[string]time.Time{}, stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(w.done)
		for {
			paths, _ := filepath.Glob(filepath.Join(dir, "*", "checkpoints", "*", "manifest.json"))
			for _, p := range paths {
				data, err := os.ReadFile(p)
				if err != nil {
					continue // deleted meanwhile
				}
				var f struct {
					Manifest struct {
						ID      string    `json:"id"`
						Created time.Time `json:"created"`
					} `json:"manifest"`
				}
				if json.Unmarshal(data, &f) == nil && f.Manifest.ID != "" {
					w.mu.Lock()
					w.created[f.Manifest.ID] = f.Manifest.Created
					w.mu.Unlock()
				}
			}
			select {
			case <-w.stop:
				return
			case <-time.After(10 * time.Millisecond):
			}
		}
	}()
	t.Cleanup(w.close)
	return w
}

func (w *manifestWatch) close() {
	select {
	case <-w.stop:
	default:
		close(w.stop)
	}
	<-w.done
}

// between counts the checkpoints completed in (from, to).
func (l *checkpointLog) between(from, to time.Time) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, t := range l.times {
		if t.After(from) && t.Before(to) {
			n++
		}
	}
	return n
}

func (l *checkpointLog) since(from time.Time) int { return l.between(from, time.Now().Add(time.Hour)) }

// A member paused past its session timeout (the broker holds its
// heartbeats: kfake's SleepControl) is dropped from the group and its
// partitions go to another member, which restores them and checkpoints
// them, while the paused member's pipelines still run and take their
// periodic checkpoints, a zombie. None of the zombie's checkpoints lands
// once the group went on without it (Fence asks the coordinator first),
// its final ones included; once it learns it was dropped it rejoins the
// group rather than failing, and takes a partition back. A fresh member
// then restores every partition from the checkpoints both left.
//
// Without the fence the zombie writes a checkpoint every interval over
// the new owner's, superseding (deleting) the newer ones: the test
// counts them.
func TestGroupZombieFenced(t *testing.T) {
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(2, "tx"), kfake.GroupMinSessionTimeout(100*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	addrs := c.ListenAddrs()
	produceGroup(t, addrs, "tx", 0, 400, &kafkago.Murmur2Balancer{}, volga.JSONKey)

	ckDir := t.TempDir()
	ckURL := "file://" + filepath.ToSlash(ckDir)
	watch := watchManifests(t, ckDir)
	outDir := t.TempDir()
	cfg := func(name string) volga.GroupConfig {
		return volga.GroupConfig{
			Source: kafka.Config{Brokers: addrs, Topic: "tx", GroupID: "zombie", Schema: groupSchema, TimeField: "ts",
				BatchSize: 64, MaxWait: 20 * time.Millisecond, HeartbeatInterval: 100 * time.Millisecond, SessionTimeout: 1500 * time.Millisecond},
			CheckpointURL:      ckURL,
			CheckpointInterval: 300 * time.Millisecond,
			Advertise:          name,
			Sink:               func(p int) (sink.Sink, error) { return sink.CreateCSV(partFile(outDir, p)) },
			RebalanceTimeout:   5 * time.Second,
		}
	}
	var aLog, bLog checkpointLog
	a := startGroup(t, groupQuery, cfg("a"), volga.WithOnCheckpoint(aLog.add))
	groupWaitFor(t, "a to own both partitions and checkpoint them", 20*time.Second, func() bool {
		return len(a.g.Owned()) == 2 && aLog.since(time.Time{}) >= 4
	})

	// From now on the broker holds a's heartbeats (the first one it sees
	// is a's: a is the only member) until release: a's session runs out.
	var (
		mu      sync.Mutex
		aMember string
	)
	release := make(chan struct{})
	c.ControlKey(kmsg.Heartbeat.Int16(), func(req kmsg.Request) (kmsg.Response, error, bool) {
		select {
		case <-release:
			c.DropControl()
			return nil, nil, false
		default:
		}
		c.KeepControl()
		hb := req.(*kmsg.HeartbeatRequest)
		mu.Lock()
		if aMember == "" {
			aMember = hb.MemberID
		}
		held := hb.MemberID == aMember
		mu.Unlock()
		if held {
			c.SleepControl(func() { <-release })
		}
		return nil, nil, false
	})
	paused := time.Now()
	released := false
	releaseOnce := func() {
		if !released {
			released = true
			close(release)
		}
	}
	t.Cleanup(releaseOnce)

	b := startGroup(t, groupQuery, cfg("b"), volga.WithOnCheckpoint(bLog.add))
	groupWaitFor(t, "b to be assigned a's partitions", 20*time.Second, func() bool { return len(b.g.Owned()) > 0 })
	took := time.Now()
	groupWaitFor(t, "b to checkpoint both partitions", 20*time.Second, func() bool {
		return len(b.g.Owned()) == 2 && bLog.since(took) >= 4
	})
	// The zombie's pipelines go on meanwhile: produce, let them read and
	// try to checkpoint.
	produceGroup(t, addrs, "tx", 400, 600, &kafkago.Murmur2Balancer{}, volga.JSONKey)
	time.Sleep(500 * time.Millisecond)
	releasedAt := time.Now()
	// back is when a owns a partition again, once it has let go of the
	// ones it had: its new pipelines begin their first checkpoint a
	// checkpoint interval after that.
	backCh := make(chan time.Time, 1)
	go func() {
		deadline := time.Now().Add(30 * time.Second)
		for len(a.g.Owned()) > 0 && time.Now().Before(deadline) {
			time.Sleep(2 * time.Millisecond)
		}
		for len(a.g.Owned()) == 0 && time.Now().Before(deadline) {
			time.Sleep(2 * time.Millisecond)
		}
		backCh <- time.Now()
	}()
	releaseOnce()

	// a learns it was dropped, stops its pipelines (their final
	// checkpoints refused), rejoins and gets a partition back.
	groupWaitFor(t, "a to rejoin and share the partitions with b", 30*time.Second, func() bool {
		return len(a.g.Owned()) == 1 && len(b.g.Owned()) == 1
	})
	rejoined := time.Now()
	back := <-backCh
	select {
	case err := <-a.done:
		t.Fatalf("the dropped member's Run returned %v while the group went on", err)
	default:
	}
	produceGroup(t, addrs, "tx", 600, 700, &kafkago.Murmur2Balancer{}, volga.JSONKey)
	groupWaitFor(t, "both members to checkpoint after the rejoin", 20*time.Second, func() bool {
		return aLog.since(rejoined) >= 2 && bLog.since(rejoined) >= 2
	})
	for _, m := range []*runningGroup{a, b} {
		m.g.Stop()
		if err := m.wait(t); err != nil {
			t.Fatalf("Run: %v", err)
		}
	}
	watch.close()

	// No checkpoint of a's was begun after b was assigned its partitions
	// and before a rejoined (its final ones, once released, included):
	// a's manifests were all written while a owned the partitions.
	// (Manifest.Created is when the commit began; the fence is asked
	// after that. The checkpoints of a's pipelines after the rejoin begin
	// a checkpoint interval after back at the earliest.)
	aLog.mu.Lock()
	ids := slices.Clone(aLog.ids)
	aLog.mu.Unlock()
	watch.mu.Lock()
	seen, late := 0, 0
	for _, id := range ids {
		created, ok := watch.created[id]
		if !ok {
			continue
		}
		seen++
		if created.After(took) && created.Before(back) {
			late++
			t.Errorf("a's checkpoint %s was begun %s after b was assigned a's partitions (released %s after, a back %s after)",
				id, created.Sub(took).Round(time.Millisecond), releasedAt.Sub(took).Round(time.Millisecond), back.Sub(took).Round(time.Millisecond))
		}
	}
	watch.mu.Unlock()
	if seen < 4 {
		t.Fatalf("the watch saw %d of a's %d checkpoints", seen, len(ids))
	}
	t.Logf("paused %s, b assigned %+.3fs, released %+.3fs, a back %+.3fs, both sharing %+.3fs; a's checkpoints %d (%d seen), begun after b's assignment, before a was back %d",
		paused.Format(time.StampMilli), took.Sub(paused).Seconds(), releasedAt.Sub(paused).Seconds(), back.Sub(paused).Seconds(), rejoined.Sub(paused).Seconds(), len(ids), seen, late)

	// A fresh member restores both partitions from the latest
	// checkpoints, which the zombie left whole, and reads the rest.
	produceGroup(t, addrs, "tx", 700, 800, &kafkago.Murmur2Balancer{}, volga.JSONKey)
	var cLog checkpointLog
	restarted := time.Now()
	m := startGroup(t, groupQuery, cfg("c"), volga.WithOnCheckpoint(cLog.add))
	groupWaitFor(t, "a fresh member to restore both partitions and publish every row", 20*time.Second, func() bool {
		return len(m.g.Owned()) == 2 && cLog.since(restarted) >= 2 && len(outputs(t, outDir, 2)) >= 800
	})
	m.g.Stop()
	if err := m.wait(t); err != nil {
		t.Fatalf("the fresh member's Run: %v", err)
	}
	// The partition files, written by the three members in turn (the
	// dropped one staging rows beside the new owner while paused), hold
	// the single-instance output: every row once.
	got := outputs(t, outDir, 2)
	want := referenceRun(t, addrs, "tx", filepath.Join(t.TempDir(), "reference.csv"))
	slices.Sort(got)
	slices.Sort(want)
	if len(want) != 800 {
		t.Fatalf("the single-instance run has %d rows, want 800", len(want))
	}
	if !slices.Equal(got, want) {
		t.Fatalf("the partition files hold %d rows, not the %d of the single-instance run", len(got), len(want))
	}
}
