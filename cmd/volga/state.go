package main

import (
	"errors"
	"flag"
	"fmt"
	"math"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/volga-go/volga"
	"github.com/volga-go/volga/source"
)

// Checkpoint and state flags, shared by volga run and volga serve:
//
//	--checkpoints URL            take checkpoints into this bucket, resume from the latest
//	--checkpoint-interval DUR    time between checkpoints (default 10s)
//	--state-dir DIR              the run's state store (Badger); emptied at start
//	--memory-budget BYTES        window state kept in memory; the rest goes to the store
//	--row-pages ROWS             page the middle rows of each key's longest frame to the store

// defaultCheckpointInterval is the --checkpoint-interval default (the
// library's default too).
const defaultCheckpointInterval = 10 * time.Second

// stateConfig holds the checkpoint and state flags.
type stateConfig struct {
	checkpoints  string // as given
	bucketURL    string // normalized for gocloud (file:// directories created)
	interval     time.Duration
	stateDir     string
	memoryBudget int64
	rowPages     int
}

// addStateFlags registers the flags on fs.
func addStateFlags(fs *flag.FlagSet, cfg *stateConfig) {
	fs.StringVar(&cfg.checkpoints, "checkpoints", "", "take checkpoints into the bucket at `URL` (file:///DIR, a directory, s3://BUCKET?region=R, mem://) and, started again with the same URL, resume from the latest one; file outputs are then exactly-once")
	cfg.interval = defaultCheckpointInterval
	fs.Var(durationFlag{&cfg.interval}, "checkpoint-interval", "with --checkpoints: the `DURATION` between checkpoints")
	fs.StringVar(&cfg.stateDir, "state-dir", "", "keep the run's state store (Badger) in `DIR`, which is emptied at start (default: a temporary directory); with --checkpoints, --memory-budget or --row-pages")
	fs.Var(bytesFlag{&cfg.memoryBudget}, "memory-budget", "keep at most this many `BYTES` of window state in memory (e.g. 512MiB, 2GB, 1000000), the rest in the on-disk store; 0 keeps all of it in memory")
	fs.IntVar(&cfg.rowPages, "row-pages", 0, "bound each key's memory whatever its longest RANGE frame: write the rows no frame edge needs to the on-disk store in pages of `ROWS` rows (e.g. 4096) and read them back when the frame's lower edge reaches them; 0 keeps every row in memory")
}

// check validates the flags after parsing; cmd names the command in
// errors, which are usage errors naming the flag.
func (cfg *stateConfig) check(cmd string, fs *flag.FlagSet) error {
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	if cfg.checkpoints == "" {
		if set["checkpoints"] {
			return usagef("%s: --checkpoints needs a bucket URL, e.g. file:///var/lib/volga/ckpt", cmd)
		}
		if set["checkpoint-interval"] {
			return usagef("%s: --checkpoint-interval applies with --checkpoints only", cmd)
		}
	} else {
		u, err := bucketURL(cfg.checkpoints)
		if err != nil {
			return usagef("%s: --checkpoints %s: %v", cmd, cfg.checkpoints, err)
		}
		cfg.bucketURL = u
		if cfg.interval <= 0 {
			return usagef("%s: --checkpoint-interval must be positive, got %s", cmd, cfg.interval)
		}
	}
	if cfg.rowPages < 0 {
		return usagef("%s: --row-pages must not be negative (0: no row paging), got %d", cmd, cfg.rowPages)
	}
	if cfg.stateDir != "" {
		if cfg.checkpoints == "" && cfg.memoryBudget == 0 && cfg.rowPages == 0 {
			return usagef("%s: --state-dir applies with --checkpoints, --memory-budget or --row-pages only", cmd)
		}
		if err := checkStateDir(cfg.stateDir); err != nil {
			return usagef("%s: --state-dir %s: %v", cmd, cfg.stateDir, err)
		}
	}
	return nil
}

// options returns the pipeline options of the flags.
func (cfg *stateConfig) options() []volga.Option {
	var opts []volga.Option
	if cfg.bucketURL != "" {
		opts = append(opts, volga.WithCheckpoints(cfg.bucketURL, cfg.interval))
	}
	if cfg.memoryBudget > 0 {
		opts = append(opts, volga.WithMemoryBudget(cfg.memoryBudget))
	}
	if cfg.rowPages > 0 {
		opts = append(opts, volga.WithRowPaging(cfg.rowPages))
	}
	if cfg.stateDir != "" {
		opts = append(opts, volga.WithStateDir(cfg.stateDir))
	}
	return opts
}

// bucketURL checks a --checkpoints value and returns the URL to open. A
// value without a scheme is a directory; file:// directories are created
// when missing, and temporary files are written next to the final ones
// (so that renames never cross file systems).
func bucketURL(v string) (string, error) {
	if !strings.Contains(v, "://") {
		abs, err := filepath.Abs(v)
		if err != nil {
			return "", err
		}
		v = "file://" + filepath.ToSlash(abs)
		if !strings.HasPrefix(filepath.ToSlash(abs), "/") {
			v = "file:///" + filepath.ToSlash(abs) // C:/... on Windows
		}
	}
	u, err := url.Parse(v)
	if err != nil {
		return "", errors.New("not a URL")
	}
	switch u.Scheme {
	case "file":
		if u.Path == "" || u.Path == "/" && u.Host == "" {
			return "", errors.New("want a directory, e.g. file:///var/lib/volga/ckpt")
		}
		q := u.Query()
		if q.Get("create_dir") == "" {
			q.Set("create_dir", "true")
		}
		if q.Get("no_tmp_dir") == "" {
			q.Set("no_tmp_dir", "true")
		}
		u.RawQuery = q.Encode()
		return u.String(), nil
	case "s3":
		if u.Host == "" {
			return "", errors.New("want s3://BUCKET?region=REGION")
		}
		return v, nil
	case "mem":
		return v, nil
	}
	return "", fmt.Errorf("unsupported scheme %q: use file:///DIR, s3://BUCKET?region=REGION or mem://", u.Scheme)
}

// checkStateDir refuses a directory that the run would empty but that
// does not hold a state store: a mistyped --state-dir must not wipe a
// directory of other files.
func checkStateDir(dir string) error {
	entries, err := readStateDir(dir)
	if err != nil || len(entries) == 0 {
		return err
	}
	for _, e := range entries {
		if isStoreFile(e.Name()) {
			return nil // a Badger store, perhaps half opened by a run that was killed
		}
	}
	return errors.New("is not empty and holds no state store; the run empties it, so name a new or empty directory")
}

// readStateDir lists a state directory: none when it does not exist yet,
// and an error without the path, which the caller's message names.
func readStateDir(dir string) ([]os.DirEntry, error) {
	entries, err := os.ReadDir(dir)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return nil, nil
	case err != nil:
		var pe *os.PathError
		if errors.As(err, &pe) {
			err = pe.Err
		}
		return nil, err
	}
	return entries, nil
}

// isStoreFile reports whether name is one of the files Badger keeps in its
// directory.
func isStoreFile(name string) bool {
	switch name {
	case "MANIFEST", "KEYREGISTRY", "LOCK", "DISCARD":
		return true
	}
	switch filepath.Ext(name) {
	case ".vlog", ".sst", ".mem":
		return true
	}
	return false
}

// bytesFlag parses --memory-budget.
type bytesFlag struct{ n *int64 }

func (f bytesFlag) String() string {
	if f.n == nil || *f.n == 0 {
		return "0"
	}
	return formatBytes(*f.n)
}

func (f bytesFlag) Set(v string) error {
	n, err := parseBytes(v)
	if err != nil {
		return err
	}
	*f.n = n
	return nil
}

// byteUnits are the units parseBytes accepts (case-insensitive): decimal
// kB, MB, GB, TB and binary KiB, MiB, GiB, TiB (also Ki, Mi, Gi, Ti, as
// Kubernetes writes them). A bare K, M or G is refused: some read it as
// 1000, others as 1024.
var byteUnits = map[string]int64{
	"":    1,
	"b":   1,
	"kb":  1e3,
	"mb":  1e6,
	"gb":  1e9,
	"tb":  1e12,
	"kib": 1 << 10,
	"mib": 1 << 20,
	"gib": 1 << 30,
	"tib": 1 << 40,
	"ki":  1 << 10,
	"mi":  1 << 20,
	"gi":  1 << 30,
	"ti":  1 << 40,
}

// parseBytes parses a byte size: a non-negative number, optionally with a
// fraction, and an optional unit (512MiB, 2GB, 1.5 GiB, 1000000).
func parseBytes(s string) (int64, error) {
	t := strings.TrimSpace(s)
	i := 0
	for i < len(t) && (t[i] >= '0' && t[i] <= '9' || t[i] == '.') {
		i++
	}
	num, unit := t[:i], strings.ToLower(strings.TrimSpace(t[i:]))
	bad := fmt.Errorf("want a size in bytes such as 512MiB, 2GB or 1000000, got %q", s)
	if num == "" {
		if strings.HasPrefix(t, "-") {
			return 0, errors.New("must not be negative")
		}
		return 0, bad
	}
	mult, ok := byteUnits[unit]
	if !ok {
		return 0, fmt.Errorf("unknown unit %q: use B, kB, MB, GB, TB, KiB, MiB, GiB or TiB", strings.TrimSpace(t[i:]))
	}
	if !strings.Contains(num, ".") {
		n, err := strconv.ParseInt(num, 10, 64)
		if err != nil || n > math.MaxInt64/mult {
			if err == nil || errors.Is(err, strconv.ErrRange) {
				return 0, fmt.Errorf("%q is too large", s)
			}
			return 0, bad
		}
		return n * mult, nil
	}
	x, err := strconv.ParseFloat(num, 64)
	if err != nil {
		return 0, bad
	}
	b := x * float64(mult)
	if b >= math.MaxInt64 {
		return 0, fmt.Errorf("%q is too large", s)
	}
	return int64(b), nil
}

// formatBytes renders n with the largest binary unit that divides it.
func formatBytes(n int64) string {
	for _, u := range []struct {
		name string
		size int64
	}{{"TiB", 1 << 40}, {"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}} {
		if n >= u.size && n%u.size == 0 {
			return strconv.FormatInt(n/u.size, 10) + u.name
		}
	}
	return strconv.FormatInt(n, 10)
}

// checkpointHelp ends the usage of run and serve, which add a paragraph.
const checkpointHelp = `checkpoints:
  With --checkpoints the run takes a consistent checkpoint of its state and
  of its input position every --checkpoint-interval, into the bucket at URL
  (one URL per pipeline). Started again with the same URL, query, input and
  --parallelism, after a crash or an interrupt, it resumes from the latest
  complete checkpoint; a bounded input read to its end is not read again.
  --log-level info logs "resuming from checkpoint".
`

// progressSource is a counted source that still offers the positions of
// the source under it, which checkpoints record and restore. Sources
// split into partitions (Kafka) are not counted: the counter would hide
// the partitions.
func progressSource(c *countingSource) source.Source {
	sk, ok := c.Source.(source.Seeker)
	if _, parts := c.Source.(source.Partitioned); !ok || parts {
		return c.Source
	}
	return &seekingCounter{countingSource: c, seeker: sk}
}

// seekingCounter is a countingSource that is a source.Seeker.
type seekingCounter struct {
	*countingSource
	seeker source.Seeker
}

func (s *seekingCounter) Position() ([]byte, error) { return s.seeker.Position() }
func (s *seekingCounter) Seek(pos []byte) error     { return s.seeker.Seek(pos) }
