package volga_test

import (
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/volga-go/volga"
	"github.com/volga-go/volga/sink"
	"github.com/volga-go/volga/statestore"
)

// heldSource serves its batch, then blocks until released or cancelled.
type heldSource struct {
	rec     arrow.RecordBatch
	sent    bool
	release chan struct{}
}

func (s *heldSource) Schema() *arrow.Schema { return s.rec.Schema() }
func (s *heldSource) Close() error          { return nil }
func (s *heldSource) Read(ctx context.Context) (arrow.RecordBatch, error) {
	if !s.sent {
		s.sent = true
		s.rec.Retain()
		return s.rec, nil
	}
	select {
	case <-s.release:
		return nil, io.EOF
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// TestStateDirInUse: a second run given the state directory of a running
// one fails with statestore.ErrDirInUse and leaves it alone; the first
// run goes on and ends with its output whole. The second run emptied
// the directory (os.RemoveAll) and opened a store of its own there,
// under the first one's open files.
func TestStateDirInUse(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Log("no flock on this platform: the directory lock is not checked")
		return
	}
	dir := filepath.Join(t.TempDir(), "state")
	rec := transactions()
	defer rec.Release()
	const q = `SELECT user_id, sum(amount) OVER (PARTITION BY user_id ORDER BY ts RANGE BETWEEN INTERVAL '1' HOUR PRECEDING AND CURRENT ROW) AS s FROM tx`
	src := &heldSource{rec: rec, release: make(chan struct{})}
	out := sink.NewCollector()
	defer out.Release()
	a, err := volga.SQL(q, volga.WithSource("tx", src), volga.WithSink(out), volga.WithStateDir(dir), volga.WithMemoryBudget(1))
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- a.Run(context.Background()) }()
	for deadline := time.Now().Add(10 * time.Second); ; {
		if _, err := os.Stat(filepath.Join(dir, "MANIFEST")); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the first run opened no store")
		}
		time.Sleep(10 * time.Millisecond)
	}
	b, err := volga.SQL(q, volga.WithSource("tx", &heldSource{rec: rec, release: make(chan struct{})}), volga.WithSink(sink.NewCallback(func(context.Context, arrow.RecordBatch) error { return nil })),
		volga.WithStateDir(dir), volga.WithMemoryBudget(1))
	if err != nil {
		t.Fatal(err)
	}
	bctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := b.Run(bctx); !errors.Is(err, statestore.ErrDirInUse) {
		close(src.release)
		t.Fatalf("second run: %v, want statestore.ErrDirInUse", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "MANIFEST")); err != nil {
		t.Errorf("the first run's store was touched: %v", err)
	}
	close(src.release)
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("first run: %v", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the first run did not end")
	}
	if n := len(out.Rows()); n != int(rec.NumRows()) {
		t.Errorf("first run wrote %d rows, want %d", n, rec.NumRows())
	}
}
