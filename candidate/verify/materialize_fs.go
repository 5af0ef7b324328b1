package verify

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/agentrt/agentrt/candidate/wsarchive"
	"github.com/agentrt/agentrt/canonjson"
)

// write prepares every root (fresh: created, or an existing empty
// directory), writes each tree and re-scans it against its manifest. On
// any failure it removes what it wrote, so a refusal leaves nothing.
func (t *trees) write() error {
	list := []*tree{t.candidate, t.profile, t.task}
	list = slices.DeleteFunc(list, func(x *tree) bool { return x == nil })
	created := make([]bool, len(list))
	prepared := 0
	cleanup := func() {
		for i := range prepared {
			if created[i] {
				_ = os.RemoveAll(list[i].root)
				continue
			}
			entries, _ := os.ReadDir(list[i].root)
			for _, e := range entries {
				_ = os.RemoveAll(filepath.Join(list[i].root, e.Name()))
			}
		}
	}
	for i, x := range list {
		c, err := prepareRoot(x.root)
		if err != nil {
			cleanup()
			return err
		}
		created[i] = c
		prepared++
	}
	// The roots were checked disjoint as written; through a symbolic
	// link in a parent they could still meet.
	real := make([]string, len(list))
	for i, x := range list {
		r, err := filepath.EvalSymlinks(x.root)
		if err != nil {
			cleanup()
			return err
		}
		for _, o := range real[:i] {
			if overlaps(r, o) {
				cleanup()
				return matErr(MatRoots, "", "%s resolves to %s, which overlaps %s", x.root, r, o)
			}
		}
		real[i] = r
	}
	for _, x := range list {
		if err := x.write(); err != nil {
			cleanup()
			return err
		}
		if err := x.rescan(); err != nil {
			cleanup()
			return err
		}
	}
	return nil
}

// prepareRoot makes root a fresh empty directory: it creates it (its
// parent must exist) or accepts an existing empty directory that is not
// a symbolic link. created says which.
func prepareRoot(root string) (created bool, err error) {
	info, err := os.Lstat(root)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		if err := os.Mkdir(root, 0o755); err != nil {
			return false, matErr(MatRoots, "", "creating %s: %v", root, err)
		}
		return true, nil
	case err != nil:
		return false, err
	case !info.IsDir():
		return false, matErr(MatRoots, "", "%s exists and is not a directory", root)
	}
	entries, err := os.ReadDir(root)
	if err != nil {
		return false, err
	}
	if len(entries) > 0 {
		return false, matErr(MatRoots, "", "%s is not empty", root)
	}
	return false, nil
}

// write creates every file exclusively (no following of a link) with its
// exact mode, whatever the umask.
func (x *tree) write() error {
	for _, f := range x.files {
		p := filepath.Join(x.root, filepath.FromSlash(f.Path))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return err
		}
		h, err := os.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_EXCL|noFollow, 0o600)
		if err != nil {
			return err
		}
		_, werr := h.Write(f.Data)
		merr := h.Chmod(f.Mode)
		if err := errors.Join(werr, merr, h.Close()); err != nil {
			return err
		}
	}
	return nil
}

// rescan walks the written directory and requires it to be exactly the
// manifest (§3.5): regular files only (no symbolic links, no hard links,
// no other entry types, no directory without a file), each with the
// manifest's mode and bytes. A task workspace's root .git and .sidecar
// are skipped.
func (x *tree) rescan() error {
	var files []wsarchive.File
	dirs := map[string]bool{}
	err := filepath.WalkDir(x.root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(x.root, p)
		if err != nil {
			return err
		}
		rel = filepath.ToSlash(rel)
		if rel == "." {
			return nil
		}
		if x.task && (rel == ".git" || rel == ".sidecar") {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		switch mode := info.Mode(); {
		case mode.IsDir():
			dirs[rel] = true
			return nil
		case !mode.IsRegular():
			return matErr(MatRescan, "", "%s: %s is not a regular file (%s)", x.root, rel, mode.Type())
		case mode&(fs.ModeSetuid|fs.ModeSetgid|fs.ModeSticky) != 0:
			return matErr(MatRescan, "", "%s: %s has setuid, setgid or sticky bits", x.root, rel)
		case hardLinked(info):
			return matErr(MatRescan, "", "%s: %s is hard-linked (or its link count is unknown)", x.root, rel)
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		files = append(files, wsarchive.File{Path: rel, Mode: info.Mode().Perm(), Data: data})
		return nil
	})
	if err != nil {
		return err
	}
	for _, f := range files {
		for dir := f.Path; strings.Contains(dir, "/"); {
			dir = dir[:strings.LastIndex(dir, "/")]
			delete(dirs, dir)
		}
	}
	for dir := range dirs {
		return matErr(MatRescan, "", "%s: directory %s holds no file of the manifest", x.root, dir)
	}
	slices.SortFunc(files, func(a, b wsarchive.File) int { return canonjson.CompareUTF16(a.Path, b.Path) })
	if err := wsarchive.Match(&wsarchive.Archive{Files: files}, x.material); err != nil {
		return matErr(MatRescan, "", "%s: %v", x.root, err)
	}
	return nil
}
