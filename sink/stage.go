package sink

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// Staging layout shared by the transactional file sinks: the output of
// epochs that are not yet published lives in a directory next to the
// target, named .<name>.volga (for out.csv: .out.csv.volga), so that a
// rename into the target never crosses file systems.
const (
	stagingSuffix = ".volga"
	currentName   = "current"  // current-<token>[.parquet]: rows of the epoch being written
	epochPrefix   = "epoch-"   // epoch-<020d>-<token>[.parquet]: a prepared epoch
	tmpSuffix     = ".tmp"     // a file being built (Parquet final file)
	parquetExt    = ".parquet" // suffix of Parquet parts
	errPrefix     = "sink: "   // prefix of file-system errors
)

// stagingDir returns the staging directory of the target path.
func stagingDir(path string) string {
	return filepath.Join(filepath.Dir(path), "."+filepath.Base(path)+stagingSuffix)
}

// epochFile returns the name of the staged output of epoch written by the
// sink instance with the given token (see stager.token); "" gives the
// names of states written before tokens were.
func epochFile(epoch uint64, token, ext string) string {
	if token == "" {
		return fmt.Sprintf("%s%020d%s", epochPrefix, epoch, ext)
	}
	return fmt.Sprintf("%s%020d-%s%s", epochPrefix, epoch, token, ext)
}

// syncFile is (*os.File).Sync; crash tests, which simulate crashes rather
// than cause them, replace it to run faster.
var syncFile = (*os.File).Sync

// syncDir makes the creations, renames and removals in dir durable.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	err = syncFile(d)
	return errors.Join(err, d.Close())
}

// resolveTarget returns the path a file sink publishes to: path itself, or
// the file a symbolic link points to. transactional is false when the
// target exists and is not a regular file (a device such as /dev/null, a
// named pipe) or is a dangling link: such a target is written directly,
// as a stream, and cannot take part in checkpoints.
func resolveTarget(path string) (target string, transactional bool) {
	if strings.HasPrefix(path, "/dev/") || strings.HasPrefix(path, "/proc/") {
		return path, false // /dev/stdout may point to a file a shell holds open
	}
	if p, err := filepath.EvalSymlinks(path); err == nil {
		fi, err := os.Stat(p)
		if err == nil && fi.Mode().IsRegular() {
			return p, true
		}
		return path, false
	}
	if _, err := os.Lstat(path); errors.Is(err, fs.ErrNotExist) {
		return path, true
	}
	return path, false
}

// stager holds what both transactional file sinks need: the paths and a
// hook through which tests stop the sink after any file-system step, as a
// crash would.
type stager struct {
	path string // the target
	dir  string // its staging directory
	// hook, when set (tests only), is called after every file-system step;
	// an error from it is returned at once, leaving the files as a crash
	// at that point would.
	hook func(step string) error
	// crashed: the hook returned an error; the files stay as they are
	// (no clean-up after a simulated crash).
	crashed bool
	// parentDirty: the directory of the target has an entry the sink
	// relies on that is not yet synced (a target it created).
	parentDirty bool
	// token is random, made at the first staged file: it is part of the
	// names of the files this instance stages (current-<token>,
	// epoch-<E>-<token>), so that two instances writing one target at
	// once never write each other's files. That happens when a consumer
	// group member the group dropped still runs (a zombie: its
	// checkpoints are refused, so it publishes nothing) while the
	// partition's new owner writes the same epochs. The staged epochs a
	// checkpoint lists carry their token, so Recover finds them in a
	// later instance; files of other instances are removed by Recover and
	// by the start of a run.
	token string
}

// tok returns the instance's token, making it the first time.
func (s *stager) tok() string {
	if s.token == "" {
		var b [6]byte
		_, _ = rand.Read(b[:]) // crypto/rand.Read does not fail
		s.token = hex.EncodeToString(b[:])
	}
	return s.token
}

// current returns the path of the staging file of the open epoch.
func (s *stager) current(ext string) string {
	return s.staged(currentName + "-" + s.tok() + ext)
}

// epochStaged returns the path of the staged output of epoch written by
// the instance with token.
func (s *stager) epochStaged(epoch uint64, token, ext string) string {
	return s.staged(epochFile(epoch, token, ext))
}

func (s *stager) step(name string) error {
	if s.hook == nil {
		return nil
	}
	err := s.hook(name)
	if err != nil {
		s.crashed = true
	}
	return err
}

func (s *stager) staged(name string) string { return filepath.Join(s.dir, name) }

// mkdir creates the staging directory if needed.
func (s *stager) mkdir() error {
	err := os.Mkdir(s.dir, 0o777)
	if err == nil {
		if err := syncDir(filepath.Dir(s.dir)); err != nil {
			return fmt.Errorf("%s%w", errPrefix, err)
		}
		s.parentDirty = false
		return s.step("mkdir staging")
	}
	if errors.Is(err, fs.ErrExist) {
		return nil
	}
	return fmt.Errorf("%s%w", errPrefix, err)
}

// clean removes the staged files for which keep returns false (every file
// when keep is nil) and makes the removals durable.
func (s *stager) clean(keep func(name string) bool) error {
	ents, err := os.ReadDir(s.dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("%s%w", errPrefix, err)
	}
	removed := false
	for _, e := range ents {
		if keep != nil && keep(e.Name()) {
			continue
		}
		if err := os.Remove(s.staged(e.Name())); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("%s%w", errPrefix, err)
		}
		removed = true
		if err := s.step("remove " + e.Name()); err != nil {
			return err
		}
	}
	if !removed {
		return nil
	}
	if err := syncDir(s.dir); err != nil {
		return fmt.Errorf("%s%w", errPrefix, err)
	}
	return s.step("sync staging")
}

// rmdir removes the staging directory if it is empty.
func (s *stager) rmdir() error {
	// Not synced: an empty directory left by a crash is harmless.
	err := os.Remove(s.dir)
	if err == nil {
		return s.step("rmdir staging")
	}
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if ents, rerr := os.ReadDir(s.dir); rerr == nil && len(ents) > 0 {
		return nil // prepared epochs wait for Commit or Recover
	}
	return fmt.Errorf("%s%w", errPrefix, err)
}

// renameOver renames the file from over the target, giving it the
// permissions the target has (as truncating the target would keep them).
func (s *stager) renameOver(from string) error {
	if fi, err := os.Stat(s.path); err == nil {
		if err := os.Chmod(from, fi.Mode().Perm()); err != nil {
			return fmt.Errorf("%s%w", errPrefix, err)
		}
	}
	if err := os.Rename(from, s.path); err != nil {
		return fmt.Errorf("%s%w", errPrefix, err)
	}
	return nil
}
