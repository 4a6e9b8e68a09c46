package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kfake"
)

// A member started again with the --state-dir it ran with (which holds a
// state store per partition, p0000 ...) starts, and resumes from its
// checkpoints; --state-dir still refuses a directory of other files. The
// check volga run makes (the directory is a store, or empty) refused the
// group's directory of stores, so that a member could not be restarted.
func TestGroupCommandStateDirRestart(t *testing.T) {
	const parts, first, total = 2, 60, 120
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(parts, "tx"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	addr := c.ListenAddrs()[0]
	produceCLI(t, addr, 0, first)

	dir := files(t, "q.sql", groupSQL)
	out := filepath.Join(dir, "out")
	if err := os.Mkdir(out, 0o755); err != nil {
		t.Fatal(err)
	}
	state := filepath.Join(dir, "state")
	args := []string{"--sql", filepath.Join(dir, "q.sql"),
		"--source", fmt.Sprintf("tx=kafka://%s/tx?group=restart&time_field=ts&max_wait=20ms", addr),
		"--checkpoints", filepath.Join(dir, "ckpt"), "--checkpoint-interval", "200ms",
		"--state-dir", state, "--sink", filepath.Join(out, "part-{partition}.csv")}
	a := startMember(t, args...)
	waitUntil(t, "the member to publish the first events", func() bool { return len(partRows(t, out)) == first })
	if code := a.stop(); code != 0 {
		t.Fatalf("the member exited with %d: %s", code, a.stderr)
	}
	for p := range parts {
		if _, err := os.Stat(filepath.Join(state, fmt.Sprintf("p%04d", p), "MANIFEST")); err != nil {
			t.Fatalf("partition %d's state store: %v", p, err)
		}
	}

	produceCLI(t, addr, first, total)
	b := startMember(t, args...)
	waitUntil(t, "the restarted member to publish the rest", func() bool { return len(partRows(t, out)) >= total })
	if code := b.stop(); code != 0 {
		t.Fatalf("the restarted member exited with %d: %s", code, b.stderr)
	}
	seen := map[string]bool{}
	for _, r := range partRows(t, out) {
		id, _, _ := strings.Cut(r, ",")
		if seen[id] {
			t.Fatalf("row %s published twice", id)
		}
		seen[id] = true
	}
	if len(seen) != total {
		t.Fatalf("%d rows published, want %d", len(seen), total)
	}

	// A directory of other files is still refused, a partition's
	// directory of other files included.
	for _, junk := range []string{"notes.txt", filepath.Join("p0001", "notes.txt")} {
		other := filepath.Join(t.TempDir(), "state")
		if err := os.MkdirAll(filepath.Dir(filepath.Join(other, junk)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(other, junk), []byte("keep me"), 0o644); err != nil {
			t.Fatal(err)
		}
		bad := append(args[:len(args)-4:len(args)-4], "--state-dir", other, "--sink", filepath.Join(out, "part-{partition}.csv"))
		code, _, stderr := cli(t, context.Background(), dir, "", append([]string{"group"}, bad...)...)
		if code == 0 || !strings.Contains(stderr, "--state-dir") {
			t.Fatalf("volga group --state-dir over %s: exit %d, stderr %q; want a usage error", junk, code, stderr)
		}
		if _, err := os.Stat(filepath.Join(other, junk)); err != nil {
			t.Fatalf("%s: %v", junk, err)
		}
	}
}
