package volga_test

import (
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	kafkago "github.com/segmentio/kafka-go"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kmsg"
	"gocloud.dev/blob"
	"gocloud.dev/blob/driver"
	"gocloud.dev/gcerrors"

	"github.com/volga-go/volga"
	"github.com/volga-go/volga/sink"
	"github.com/volga-go/volga/source/kafka"
	"github.com/volga-go/volga/statestore"
)

// pausingBucket is a bucket driver over another bucket that, once armed,
// holds the first listing of each partition's checkpoints that begins a
// commit (the one that looks for newer checkpoints to supersede, right
// after the commit's fence agreed) until released: a member paused
// between its fence and its act. It records the manifests it deletes, and
// apart those it deletes as a zombie: after the release, in a partition
// it has not restored since (a member that rejoined and restored the
// partition from the new owner's checkpoints is its rightful owner, and
// its retention may delete old ones).
type pausingBucket struct {
	b *blob.Bucket

	mu       sync.Mutex
	armed    bool
	held     map[string]bool // partition prefixes whose listing was held
	manifest map[string]bool // partition prefix -> its last write was a manifest
	deleted  []string        // ids of the manifests deleted
	// restored marks the partitions whose state objects were read after
	// the release: restored by a member that owns them again.
	restored map[string]bool
	zombie   []string // ids of the manifests deleted in partitions not restored since the release
	release  chan struct{}
}

func newPausingBucket(b *blob.Bucket) *pausingBucket {
	return &pausingBucket{b: b, held: map[string]bool{}, manifest: map[string]bool{}, restored: map[string]bool{}, release: make(chan struct{})}
}

func (p *pausingBucket) arm() {
	p.mu.Lock()
	p.armed = true
	p.mu.Unlock()
}

func (p *pausingBucket) holding() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.held)
}

func partitionOf(key string) string { part, _, _ := strings.Cut(key, "/"); return part }

func (p *pausingBucket) ListPaged(ctx context.Context, opts *driver.ListOptions) (*driver.ListPage, error) {
	part, rest, _ := strings.Cut(opts.Prefix, "/")
	if rest == "checkpoints/" && opts.Delimiter == "/" && opts.PageToken == nil {
		p.mu.Lock()
		// A listing after a manifest is the commit's retention.
		hold := p.armed && !p.manifest[part] && !p.held[part]
		p.manifest[part] = false
		if hold {
			p.held[part] = true
		}
		p.mu.Unlock()
		if hold {
			select {
			case <-p.release:
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		}
	}
	token, size := opts.PageToken, max(opts.PageSize, 1000)
	if token == nil {
		token = blob.FirstPageToken
	}
	objs, next, err := p.b.ListPage(ctx, token, size, &blob.ListOptions{Prefix: opts.Prefix, Delimiter: opts.Delimiter})
	if err != nil {
		return nil, err
	}
	page := &driver.ListPage{NextPageToken: next}
	for _, o := range objs {
		page.Objects = append(page.Objects, &driver.ListObject{Key: o.Key, ModTime: o.ModTime, Size: o.Size, MD5: o.MD5, IsDir: o.IsDir})
	}
	if len(next) == 0 {
		page.NextPageToken = nil
	}
	return page, nil
}

func (p *pausingBucket) NewTypedWriter(ctx context.Context, key, contentType string, opts *driver.WriterOptions) (driver.Writer, error) {
	if strings.HasSuffix(key, "/manifest.json") {
		p.mu.Lock()
		p.manifest[partitionOf(key)] = true
		p.mu.Unlock()
	}
	return p.b.NewWriter(ctx, key, &blob.WriterOptions{ContentType: contentType, IfNotExist: opts.IfNotExist})
}

func (p *pausingBucket) Delete(ctx context.Context, key string, _ *driver.DeleteOptions) error {
	if strings.HasSuffix(key, "/manifest.json") {
		if data, err := p.b.ReadAll(ctx, key); err == nil {
			var f struct {
				Manifest struct {
					ID string `json:"id"`
				} `json:"manifest"`
			}
			if json.Unmarshal(data, &f) == nil {
				p.mu.Lock()
				p.deleted = append(p.deleted, f.Manifest.ID)
				if !p.restored[partitionOf(key)] {
					p.zombie = append(p.zombie, f.Manifest.ID)
				}
				p.mu.Unlock()
			}
		}
	}
	return p.b.Delete(ctx, key)
}

func (p *pausingBucket) NewRangeReader(ctx context.Context, key string, offset, length int64, _ *driver.ReaderOptions) (driver.Reader, error) {
	select {
	case <-p.release:
		if !strings.HasSuffix(key, "/manifest.json") {
			p.mu.Lock()
			p.restored[partitionOf(key)] = true
			p.mu.Unlock()
		}
	default:
	}
	r, err := p.b.NewRangeReader(ctx, key, offset, length, nil)
	if err != nil {
		return nil, err
	}
	return &pausingReader{r}, nil
}

type pausingReader struct{ *blob.Reader }

func (r *pausingReader) Attributes() *driver.ReaderAttributes {
	return &driver.ReaderAttributes{ContentType: r.ContentType(), ModTime: r.ModTime(), Size: r.Size()}
}
func (r *pausingReader) As(any) bool { return false }

func (p *pausingBucket) Attributes(ctx context.Context, key string) (*driver.Attributes, error) {
	a, err := p.b.Attributes(ctx, key)
	if err != nil {
		return nil, err
	}
	return &driver.Attributes{ContentType: a.ContentType, ModTime: a.ModTime, Size: a.Size, MD5: a.MD5, ETag: a.ETag}, nil
}

func (p *pausingBucket) ErrorCode(err error) gcerrors.ErrorCode { return gcerrors.Code(err) }
func (p *pausingBucket) As(any) bool                            { return false }
func (p *pausingBucket) ErrorAs(error, any) bool                { return false }
func (p *pausingBucket) Copy(ctx context.Context, dst, src string, _ *driver.CopyOptions) error {
	return p.b.Copy(ctx, dst, src, nil)
}
func (p *pausingBucket) SignedURL(context.Context, string, *driver.SignedURLOptions) (string, error) {
	return "", errors.ErrUnsupported
}
func (p *pausingBucket) Close() error { return nil }

// A member is paused right after the fence of a checkpoint agreed (its
// session still running), before the commit looks for newer checkpoints
// to supersede; the group drops it and the partitions' new owner restores
// and checkpoints them. Running again, the paused member's commits find
// the new owner's newer checkpoints and are refused: it deletes none of
// them (superseding on its stale answer, it deleted every one), rejoins,
// and every partition's latest checkpoint is whole.
func TestGroupZombiePausedAfterFence(t *testing.T) {
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(2, "tx"), kfake.GroupMinSessionTimeout(100*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	addrs := c.ListenAddrs()
	produceGroup(t, addrs, "tx", 0, 400, &kafkago.Murmur2Balancer{}, volga.JSONKey)

	ckURL := "file://" + filepath.ToSlash(t.TempDir())
	open := func() *blob.Bucket {
		b, err := blob.OpenBucket(context.Background(), ckURL)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = b.Close() })
		return b
	}
	paused := newPausingBucket(open())
	aBucket := blob.NewBucket(paused)
	t.Cleanup(func() { _ = aBucket.Close() })
	outDir := t.TempDir()
	cfg := func(name string, bucket *blob.Bucket) volga.GroupConfig {
		return volga.GroupConfig{
			Source: kafka.Config{Brokers: addrs, Topic: "tx", GroupID: "zombie", Schema: groupSchema, TimeField: "ts",
				BatchSize: 64, MaxWait: 20 * time.Millisecond, HeartbeatInterval: 100 * time.Millisecond, SessionTimeout: 1500 * time.Millisecond},
			CheckpointBucket:   bucket,
			CheckpointInterval: 300 * time.Millisecond,
			Advertise:          name,
			Sink:               func(p int) (sink.Sink, error) { return sink.CreateCSV(partFile(outDir, p)) },
			RebalanceTimeout:   5 * time.Second,
		}
	}
	var aLog, bLog checkpointLog
	a := startGroup(t, groupQuery, cfg("a", aBucket), volga.WithOnCheckpoint(aLog.add))
	groupWaitFor(t, "a to own both partitions and checkpoint them", 20*time.Second, func() bool {
		return len(a.g.Owned()) == 2 && aLog.since(time.Time{}) >= 4
	})

	// The broker holds a's heartbeats from now on, and a's next commit
	// of each partition stops after its fence.
	var (
		mu      sync.Mutex
		aMember string
	)
	release := make(chan struct{})
	released := false
	releaseOnce := func() {
		if !released {
			released = true
			close(release)
			close(paused.release)
		}
	}
	t.Cleanup(releaseOnce)
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
	paused.arm()
	groupWaitFor(t, "a's commits of both partitions to stop after their fences", 10*time.Second, func() bool { return paused.holding() == 2 })

	b := startGroup(t, groupQuery, cfg("b", open()), volga.WithOnCheckpoint(bLog.add))
	groupWaitFor(t, "b to be assigned a's partitions", 20*time.Second, func() bool { return len(b.g.Owned()) > 0 })
	took := time.Now()
	produceGroup(t, addrs, "tx", 400, 500, &kafkago.Murmur2Balancer{}, volga.JSONKey)
	groupWaitFor(t, "b to checkpoint both partitions", 20*time.Second, func() bool {
		return len(b.g.Owned()) == 2 && bLog.since(took) >= 4
	})
	releaseOnce()
	groupWaitFor(t, "a to rejoin and share the partitions with b", 30*time.Second, func() bool {
		return len(a.g.Owned()) == 1 && len(b.g.Owned()) == 1
	})
	select {
	case err := <-a.done:
		t.Fatalf("the paused member's Run returned %v while the group went on", err)
	default:
	}
	for _, m := range []*runningGroup{a, b} {
		m.g.Stop()
		if err := m.wait(t); err != nil {
			t.Fatalf("Run: %v", err)
		}
	}

	bLog.mu.Lock()
	bIDs := slices.Clone(bLog.ids)
	bLog.mu.Unlock()
	paused.mu.Lock()
	deleted, zombie := slices.Clone(paused.deleted), slices.Clone(paused.zombie)
	paused.mu.Unlock()
	for _, id := range zombie {
		if slices.Contains(bIDs, id) {
			t.Errorf("the paused member deleted the new owner's checkpoint %s before it owned the partition again (it deleted %d manifests then; b wrote %d)", id, len(zombie), len(bIDs))
		}
	}
	// Every partition's latest checkpoint is whole and restores.
	bucket := open()
	for _, part := range []string{"p0000/", "p0001/"} {
		cp := statestore.NewCheckpointer(bucket, statestore.WithPrefix(part))
		m, err := cp.Latest(context.Background())
		if err != nil {
			t.Fatalf("partition %s: %v", part, err)
		}
		db, _, err := cp.Restore(context.Background(), m, t.TempDir())
		if err != nil {
			t.Fatalf("partition %s: %v", part, err)
		}
		_ = db.Close()
	}
	t.Logf("the paused member deleted %d manifests (%d before it owned their partition again); the new owner wrote %d", len(deleted), len(zombie), len(bIDs))
}
