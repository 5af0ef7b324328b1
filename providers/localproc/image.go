package localproc

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
)

// ErrImage is wrapped by refusals of an image: an unknown reference, a
// tree holding something other than directories, regular files and
// symbolic links, or a tree that no longer has its registered digest.
var ErrImage = errors.New("localproc: image")

// ImageRefPrefix starts every image reference this provider accepts:
// "local@sha256:" and 64 lowercase hex digits, the digest of the image
// directory's manifest (ImageRef).
const ImageRefPrefix = "local@sha256:"

// manifestHeader starts every image manifest; a change of the manifest
// format changes it.
const manifestHeader = "localproc-image-manifest.v1\n"

// ImageRef returns the immutable reference of the image directory dir:
// "local@sha256:<hex>", the SHA-256 of its manifest. The manifest lists
// every entry below dir in lexical order with its type, POSIX mode
// (permission, setuid, setgid and sticky bits), and the SHA-256 of a
// regular file's bytes or a symbolic link's target; owners and times are
// not part of it. A tree holding any other kind of file (device, socket,
// FIFO) is refused with ErrImage.
func ImageRef(dir string) (string, error) {
	m := newManifest()
	root, err := os.OpenRoot(dir)
	if err != nil {
		return "", fmt.Errorf("%w: %w", ErrImage, err)
	}
	defer root.Close()
	err = fs.WalkDir(root.FS(), ".", func(rel string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if rel == "." {
			return nil
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		switch {
		case info.Mode().IsDir():
			m.add(rel, 'd', info.Mode(), "-")
		case info.Mode()&fs.ModeSymlink != 0:
			target, err := root.Readlink(rel)
			if err != nil {
				return err
			}
			m.add(rel, 'l', info.Mode(), strconv.Quote(target))
		case info.Mode().IsRegular():
			f, err := root.Open(rel)
			if err != nil {
				return err
			}
			defer f.Close()
			h := sha256.New()
			if _, err := io.Copy(h, f); err != nil {
				return err
			}
			m.add(rel, 'f', info.Mode(), hex.EncodeToString(h.Sum(nil)))
		default:
			return fmt.Errorf("%w: %s is neither a directory, a regular file nor a symbolic link", ErrImage, rel)
		}
		return nil
	})
	if err != nil {
		return "", fmt.Errorf("%w: %s: %w", ErrImage, dir, err)
	}
	return m.ref(), nil
}

// manifest accumulates an image manifest's digest.
type manifest struct{ h hash.Hash }

func newManifest() *manifest {
	m := &manifest{h: sha256.New()}
	m.h.Write([]byte(manifestHeader))
	return m
}

func (m *manifest) add(rel string, kind byte, mode fs.FileMode, content string) {
	fmt.Fprintf(m.h, "%c %04o %s %s\n", kind, posixBits(mode), content, strconv.Quote(filepath.ToSlash(rel)))
}

func (m *manifest) ref() string { return ImageRefPrefix + hex.EncodeToString(m.h.Sum(nil)) }

// posixBits is mode's permission, setuid, setgid and sticky bits in POSIX
// form.
func posixBits(mode fs.FileMode) uint32 {
	b := uint32(mode.Perm())
	if mode&fs.ModeSetuid != 0 {
		b |= 0o4000
	}
	if mode&fs.ModeSetgid != 0 {
		b |= 0o2000
	}
	if mode&fs.ModeSticky != 0 {
		b |= 0o1000
	}
	return b
}

// materialize copies the image tree src into dst (which must not exist),
// hashing what it copies, owned by uid:gid. It fails with ErrImage when
// the copy's manifest is not ref (the image changed since it was
// registered) and when it holds more than maxBytes of file content.
func materialize(src, dst, ref string, uid, gid int, maxBytes int64) error {
	if err := os.Mkdir(dst, 0o755); err != nil {
		return fmt.Errorf("localproc: %w", err)
	}
	m := newManifest()
	var total int64
	srcRoot, err := os.OpenRoot(src)
	if err != nil {
		return fmt.Errorf("%w: %w", ErrImage, err)
	}
	defer srcRoot.Close()
	err = fs.WalkDir(srcRoot.FS(), ".", func(rel string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		target := filepath.Join(dst, rel)
		info, err := d.Info()
		if err != nil {
			return err
		}
		mode := info.Mode()
		switch {
		case rel == ".":
			return os.Chmod(dst, mode&(fs.ModePerm|fs.ModeSetgid|fs.ModeSticky))
		case mode.IsDir():
			if err := os.Mkdir(target, 0o700); err != nil {
				return err
			}
			m.add(rel, 'd', mode, "-")
			return nil
		case mode&fs.ModeSymlink != 0:
			link, err := srcRoot.Readlink(rel)
			if err != nil {
				return err
			}
			m.add(rel, 'l', mode, strconv.Quote(link))
			return os.Symlink(link, target)
		case mode.IsRegular():
			n, sum, err := copyFile(srcRoot, rel, target)
			if err != nil {
				return err
			}
			if total += n; total > maxBytes {
				return fmt.Errorf("%w: the image holds more than the environment's %d disk bytes", ErrImage, maxBytes)
			}
			m.add(rel, 'f', mode, sum)
			return nil
		}
		return fmt.Errorf("%w: %s is neither a directory, a regular file nor a symbolic link", ErrImage, rel)
	})
	if err != nil {
		return fmt.Errorf("localproc: materialize image: %w", err)
	}
	if got := m.ref(); got != ref {
		return fmt.Errorf("%w: the image directory no longer has reference %s (its content is %s)", ErrImage, ref, got)
	}
	// Owner and exact modes last: a chown clears setuid and setgid bits,
	// and directories stayed writable while they were filled.
	return filepath.WalkDir(dst, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if err := os.Lchown(p, uid, gid); err != nil {
			return fmt.Errorf("localproc: %w", err)
		}
		if d.Type()&fs.ModeSymlink != 0 || p == dst {
			return nil
		}
		rel, _ := filepath.Rel(dst, p)
		info, err := srcRoot.Lstat(rel)
		if err != nil {
			return fmt.Errorf("localproc: %w", err)
		}
		return os.Chmod(p, info.Mode()&(fs.ModePerm|fs.ModeSetuid|fs.ModeSetgid|fs.ModeSticky))
	})
}

// copyFile copies the regular file rel of root to target, returning the
// bytes copied and their SHA-256.
func copyFile(root *os.Root, rel, target string) (int64, string, error) {
	in, err := root.Open(rel)
	if err != nil {
		return 0, "", err
	}
	defer in.Close()
	out, err := os.OpenFile(target, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return 0, "", err
	}
	h := sha256.New()
	n, err := io.Copy(io.MultiWriter(out, h), in)
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	return n, hex.EncodeToString(h.Sum(nil)), err
}
