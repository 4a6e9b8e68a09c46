package sink

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/volga-go/volga/internal/arrowutil"
)

// tokenRE matches the token in a staged file's name (stager.token).
var tokenRE = regexp.MustCompile(`-[0-9a-f]{12}(\.|$)`)

// untoken returns a staged file's name without its instance's token:
// current-<token>.parquet is current.parquet.
func untoken(name string) string { return tokenRE.ReplaceAllString(name, "$1") }

// stagedEpoch returns the path of the one staged file of epoch in the
// staging directory dir, whatever instance staged it.
func stagedEpoch(t *testing.T, dir string, epoch uint64, ext string) string {
	t.Helper()
	m, err := filepath.Glob(filepath.Join(dir, epochFile(epoch, "*", ext)))
	if err != nil || len(m) != 1 {
		t.Fatalf("staged files of epoch %d in %s: %v (%v), want one", epoch, dir, m, err)
	}
	return m[0]
}

// TestStagingTwoWriters: a sink that goes on writing a target after
// another instance restored it from a checkpoint (a consumer group member
// the group dropped, still running, and the partition's new owner, on a
// shared file system) stages its files under names of its own, so the
// new owner publishes exactly its own epochs whatever the other staged
// meanwhile, and nothing the other prepared after the restored epoch.
// (With names shared by both, the other's epochs, prepared last,
// replaced the new owner's staged files.)
func TestStagingTwoWriters(t *testing.T) {
	ctx := context.Background()
	mem := memory.NewCheckedAllocator(memory.DefaultAllocator)
	defer mem.AssertSize(t, 0)
	b := txBatches(mem, 5)
	defer arrowutil.ReleaseAll(b)
	for _, k := range textKinds {
		t.Run(k.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), k.file)
			zombie, err := k.open(path)
			if err != nil {
				t.Fatal(err)
			}
			mustWrite(t, zombie, b[0])
			st1 := mustPrepare(t, zombie, 1)
			mustCommit(t, zombie, 1)
			// The new owner restores epoch 1; the other goes on.
			owner, err := k.open(path)
			if err != nil {
				t.Fatal(err)
			}
			if err := owner.Recover(ctx, 1, st1); err != nil {
				t.Fatal(err)
			}
			mustWrite(t, zombie, b[1])
			mustWrite(t, owner, b[2])
			mustPrepare(t, owner, 2)
			mustPrepare(t, zombie, 2) // its checkpoint is refused: never committed
			mustWrite(t, zombie, b[3])
			mustWrite(t, owner, b[4])
			mustPrepare(t, owner, 3)
			mustPrepare(t, zombie, 3)
			mustCommit(t, owner, 3)
			zombie.abandon()
			if err := owner.Close(); err != nil {
				t.Fatal(err)
			}
			checkFile(t, k, path, expectText(t, k, b[0], b[2], b[4]), "the new owner's output")
		})
	}
}

// TestStagingLegacyNames: a checkpoint state written before staged files
// carried their instance's token (no "token", files epoch-<E>) still
// recovers: Recover publishes the staged epoch under its old name.
func TestStagingLegacyNames(t *testing.T) {
	ctx := context.Background()
	mem := memory.NewCheckedAllocator(memory.DefaultAllocator)
	defer mem.AssertSize(t, 0)
	b := txBatches(mem, 2)
	defer arrowutil.ReleaseAll(b)
	for _, k := range textKinds {
		t.Run(k.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), k.file)
			s, err := k.open(path)
			if err != nil {
				t.Fatal(err)
			}
			mustWrite(t, s, b[0])
			mustPrepare(t, s, 1)
			mustCommit(t, s, 1)
			mustWrite(t, s, b[1])
			st := mustPrepare(t, s, 2) // crash before Commit(2)
			s.abandon()
			// The state and the staged file as an earlier version left them.
			var state map[string]any
			if err := json.Unmarshal(st, &state); err != nil {
				t.Fatal(err)
			}
			for _, e := range state["staged"].([]any) {
				delete(e.(map[string]any), "token")
			}
			old, err := json.Marshal(state)
			if err != nil {
				t.Fatal(err)
			}
			staged := stagedEpoch(t, stagingDir(path), 2, "")
			if err := os.Rename(staged, filepath.Join(stagingDir(path), epochFile(2, "", ""))); err != nil {
				t.Fatal(err)
			}
			r, err := k.open(path)
			if err != nil {
				t.Fatal(err)
			}
			if err := r.Recover(ctx, 2, old); err != nil {
				t.Fatalf("Recover from a state without tokens: %v", err)
			}
			if err := r.Close(); err != nil {
				t.Fatal(err)
			}
			checkFile(t, k, path, expectText(t, k, b[0], b[1]), "after Recover")
		})
	}
}
