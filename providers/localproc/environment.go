package localproc

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"path"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/contract"
)

// ErrDestroyed is wrapped by every operation on a destroyed environment
// but Destroy. It wraps contract.ErrDestroyed.
var ErrDestroyed = fmt.Errorf("localproc: %w", contract.ErrDestroyed)

// ErrPath is wrapped by the refusal of a path that is not absolute or
// leaves the environment's root.
var ErrPath = errors.New("localproc: path outside the environment")

// environment is one exact environment: state directory
// Dir/envs/<id> (0700) holding env.json, root/ (the image copy processes
// see as /) and procs/<pid>/ per process.
type environment struct {
	p   *Provider
	rec *envRecord
	dir string

	mu        sync.Mutex
	gone      bool
	procs     map[int64]*process
	nextPID   int64
	expiry    *time.Timer
	destroyMu sync.Mutex
	// spawning is held (read) by every Spawn of this instance and
	// (write) by Destroy while it marks the environment gone, so each
	// process either is refused or is killed by the Destroy.
	spawning sync.RWMutex
}

func newEnvironment(p *Provider, rec *envRecord) *environment {
	return &environment{p: p, rec: rec, dir: p.envDir(rec.ID), procs: map[int64]*process{}}
}

// ID implements contract.ExactProcessEnvironment.
func (e *environment) ID() string { return e.rec.ID }

// Provider implements contract.ExactProcessEnvironment.
func (e *environment) Provider() string { return e.p.name }

// Metadata implements contract.ExactProcessEnvironment.
func (e *environment) Metadata() map[string]canonjson.Value { return maps.Clone(e.rec.Input.Metadata) }

// Processes implements contract.ExactProcessEnvironment.
func (e *environment) Processes() contract.ExactProcessManager { return manager{e} }

func (e *environment) rootDir() string  { return filepath.Join(e.dir, "root") }
func (e *environment) procsDir() string { return filepath.Join(e.dir, "procs") }

func (e *environment) expired(now time.Time) bool { return now.UnixMilli() >= e.rec.ExpiresAtMs }

// armExpiry destroys the environment when its maxLifetimeMs ends.
func (e *environment) armExpiry() {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.expiry != nil || e.gone {
		return
	}
	d := time.Until(time.UnixMilli(e.rec.ExpiresAtMs))
	e.expiry = time.AfterFunc(max(d, 0), func() { e.Destroy(context.Background()) })
}

// stopExpiry stops the lifetime timer (Provider.Close).
func (e *environment) stopExpiry() {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.expiry != nil {
		e.expiry.Stop()
	}
}

func (e *environment) markGone() {
	e.mu.Lock()
	e.gone = true
	if e.expiry != nil {
		e.expiry.Stop()
	}
	e.mu.Unlock()
}

// live fails when the environment was destroyed, by this or another
// instance.
func (e *environment) live() error {
	e.mu.Lock()
	gone := e.gone
	e.mu.Unlock()
	if !gone {
		if _, err := os.Stat(filepath.Join(e.dir, "env.json")); err == nil {
			return nil
		}
		e.markGone()
	}
	return fmt.Errorf("%w: %s", ErrDestroyed, e.rec.ID)
}

// relPath maps an absolute path of the environment to a path relative to
// its root; "." is the root itself.
func relPath(p string) (string, error) {
	if !path.IsAbs(p) || strings.ContainsRune(p, 0) {
		return "", fmt.Errorf("%w: %q is not an absolute path", ErrPath, p)
	}
	rel := strings.TrimPrefix(path.Clean(p), "/")
	if rel == "" {
		rel = "."
	}
	return rel, nil
}

// WriteFile implements contract.ExactProcessEnvironment: exactly data,
// mode exactly mode (umask does not apply), owned by the sandbox user,
// at absPath inside the environment root. The file is written beside its
// target and renamed over it, so a symbolic link at absPath is replaced,
// never followed; the parent directory must exist and is resolved inside
// the root (a symbolic link leaving the root, or "..", is refused with
// ErrPath). More bytes than the environment's diskMb are refused.
func (e *environment) WriteFile(ctx context.Context, absPath string, data []byte, mode fs.FileMode) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if _, err := contract.PosixFileMode(mode); err != nil {
		return err
	}
	if err := e.live(); err != nil {
		return err
	}
	rel, err := relPath(absPath)
	if err != nil {
		return err
	}
	if rel == "." {
		return fmt.Errorf("%w: cannot write the root directory", ErrPath)
	}
	if limit := e.rec.Input.Resources.DiskMB << 20; int64(len(data)) > limit {
		return fmt.Errorf("localproc: %d bytes exceed the environment's %d disk bytes", len(data), limit)
	}
	root, err := os.OpenRoot(e.rootDir())
	if err != nil {
		return fmt.Errorf("localproc: %w", err)
	}
	defer root.Close()
	tmp := path.Join(path.Dir(rel), fmt.Sprintf(".localproc-write-%d-%d", os.Getpid(), time.Now().UnixNano()))
	f, err := root.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return wrapRootErr(absPath, err)
	}
	_, werr := f.Write(data)
	cerr := f.Close()
	err = errors.Join(werr, cerr)
	if err == nil {
		err = root.Chown(tmp, e.p.uid, e.p.gid)
	}
	if err == nil {
		err = root.Chmod(tmp, mode)
	}
	if err == nil {
		err = root.Rename(tmp, rel)
	}
	if err != nil {
		root.Remove(tmp)
		return wrapRootErr(absPath, err)
	}
	return ctx.Err()
}

func wrapRootErr(p string, err error) error {
	var pe *os.PathError
	if errors.As(err, &pe) && strings.Contains(pe.Err.Error(), "escapes") {
		return fmt.Errorf("%w: %s: %w", ErrPath, p, err)
	}
	return fmt.Errorf("localproc: %s: %w", p, err)
}

// ReadFile implements contract.ExactProcessEnvironment: the exact bytes
// of the regular file at path inside the environment root (symbolic
// links are followed only inside the root). The size is checked before
// any content is read, and at most maxBytes+1 bytes are read, so a file
// that grew past maxBytes is refused too (*contract.FileTooLargeError).
func (e *environment) ReadFile(ctx context.Context, p string, maxBytes int64) ([]byte, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if maxBytes < 0 {
		return nil, fmt.Errorf("localproc: negative maxBytes %d", maxBytes)
	}
	if err := e.live(); err != nil {
		return nil, err
	}
	rel, err := relPath(p)
	if err != nil {
		return nil, err
	}
	root, err := os.OpenRoot(e.rootDir())
	if err != nil {
		return nil, fmt.Errorf("localproc: %w", err)
	}
	defer root.Close()
	// O_NONBLOCK: opening a FIFO must not wait for a writer.
	f, err := root.OpenFile(rel, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, wrapRootErr(p, err)
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("localproc: %s: %w", p, err)
	}
	if !info.Mode().IsRegular() {
		return nil, fmt.Errorf("localproc: %s is not a regular file", p)
	}
	if info.Size() > maxBytes {
		return nil, &contract.FileTooLargeError{Path: p, Size: info.Size(), MaxBytes: maxBytes}
	}
	data, err := io.ReadAll(io.LimitReader(f, maxBytes+1))
	if err != nil {
		return nil, fmt.Errorf("localproc: %s: %w", p, err)
	}
	if int64(len(data)) > maxBytes {
		return nil, &contract.FileTooLargeError{Path: p, Size: -1, MaxBytes: maxBytes}
	}
	return data, nil
}

// Destroy implements contract.ExactProcessEnvironment: it kills every
// process tree of the environment, waits (up to five seconds) until each
// is reaped, then removes the state directory (renamed away first, so Get
// and List stop seeing it at once). Destroying a destroyed environment
// succeeds.
func (e *environment) Destroy(ctx context.Context) error {
	e.destroyMu.Lock()
	defer e.destroyMu.Unlock()
	e.spawning.Lock()
	e.markGone()
	e.spawning.Unlock()
	defer e.p.forget(e)
	if _, err := os.Stat(e.dir); errors.Is(err, os.ErrNotExist) {
		return nil
	}
	procs, _ := e.allProcs()
	for _, pr := range procs {
		pr.killTree(contract.TerminationSignal)
	}
	wait, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	for _, pr := range procs {
		pr.awaitDone(wait)
	}
	trash := filepath.Join(e.p.envsDir, ".trash-"+e.rec.ID)
	if err := os.Rename(e.dir, trash); err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil
		}
		return fmt.Errorf("localproc: destroy %s: %w", e.rec.ID, err)
	}
	if err := os.RemoveAll(trash); err != nil {
		return fmt.Errorf("localproc: destroy %s: %w", e.rec.ID, err)
	}
	return nil
}
