package sink

import (
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
	currentName   = "current"  // rows of the epoch being written
	epochPrefix   = "epoch-"   // epoch-<020d>[.parquet]: a prepared epoch
	tmpSuffix     = ".tmp"     // a file being built (Parquet final file)
	parquetExt    = ".parquet" // suffix of Parquet parts
	errPrefix     = "sink: "   // prefix of file-system errors
)

// stagingDir returns the staging directory of the target path.
func stagingDir(path string) string {
	return filepath.Join(filepath.Dir(path), "."+filepath.Base(path)+stagingSuffix)
}

// epochFile returns the name of the staged output of epoch.
func epochFile(epoch uint64, ext string) string {
	return fmt.Sprintf("%s%020d%s", epochPrefix, epoch, ext)
}

// parseEpochFile returns the epoch of a staged file name.
func parseEpochFile(name, ext string) (uint64, bool) {
	s, ok := strings.CutPrefix(name, epochPrefix)
	if !ok {
		return 0, false
	}
	s, ok = strings.CutSuffix(s, ext)
	if !ok || len(s) != 20 {
		return 0, false
	}
	var e uint64
	for _, c := range []byte(s) {
		if c < '0' || c > '9' {
			return 0, false
		}
		e = e*10 + uint64(c-'0')
	}
	return e, true
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
	// parentDirty: the directory of the target has an entry the sink
	// relies on that is not yet synced (a target it created).
	parentDirty bool
}

func (s *stager) step(name string) error {
	if s.hook == nil {
		return nil
	}
	return s.hook(name)
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
