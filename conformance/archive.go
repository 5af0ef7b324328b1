package conformance

import (
	"archive/zip"
	"bytes"
	"context"
	"fmt"
	"io"
	"io/fs"
	"os/exec"
	"strings"

	"golang.org/x/mod/modfile"
	"golang.org/x/mod/module"
	modzip "golang.org/x/mod/zip"
)

// CreateArchive writes the module zip of revision (a commit, tag or
// "HEAD") of the git repository at repoRoot, for the module at its root,
// as version: the bytes `go mod download` would serve for modPath@version.
// Like the go command it takes the files from `git archive` (so ignored
// and export-ignore files are left out) and lays them out with
// golang.org/x/mod/zip; unlike modzip.CreateFromVCS it also accepts a
// linked worktree.
func CreateArchive(ctx context.Context, w io.Writer, repoRoot, modPath, version, revision string) error {
	cmd := exec.CommandContext(ctx, "git", "-c", "core.autocrlf=input", "-c", "core.eol=lf", "archive", "--format=zip", revision)
	cmd.Dir = repoRoot
	var out, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("git archive %s: %w: %s", revision, err, bytes.TrimSpace(stderr.Bytes()))
	}
	zr, err := zip.NewReader(bytes.NewReader(out.Bytes()), int64(out.Len()))
	if err != nil {
		return fmt.Errorf("git archive %s: %w", revision, err)
	}
	var files []modzip.File
	for _, f := range zr.File {
		if !strings.HasSuffix(f.Name, "/") {
			files = append(files, zipFile{f})
		}
	}
	return modzip.Create(w, module.Version{Path: modPath, Version: version}, files)
}

// zipFile is a git archive entry as a module file.
type zipFile struct{ f *zip.File }

func (z zipFile) Path() string                 { return z.f.Name }
func (z zipFile) Lstat() (fs.FileInfo, error)  { return z.f.FileInfo(), nil }
func (z zipFile) Open() (io.ReadCloser, error) { return z.f.Open() }

// ArchiveIdentity reads a module zip and returns the module path and
// version it holds: every entry must lie under one "path@version/"
// prefix that module.Check accepts, and the zip's go.mod must declare that
// module path (the Go analogue of the packed package.json).
func ArchiveIdentity(data []byte) (modPath, version string, err error) {
	zr, err := zip.NewReader(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		return "", "", &ArchiveError{Reason: err.Error()}
	}
	if len(zr.File) == 0 {
		return "", "", &ArchiveError{Reason: "empty"}
	}
	prefix := ""
	var gomod *zip.File
	for _, f := range zr.File {
		name := f.Name
		if prefix == "" {
			at := strings.Index(name, "@")
			slash := -1
			if at >= 0 {
				slash = strings.Index(name[at:], "/")
			}
			if at <= 0 || slash < 0 {
				return "", "", &ArchiveError{Entry: name, Reason: "not under a path@version/ prefix"}
			}
			prefix = name[:at+slash+1]
			modPath, version = name[:at], name[at+1:at+slash]
			if err := module.Check(modPath, version); err != nil {
				return "", "", &ArchiveError{Entry: name, Reason: err.Error()}
			}
			if module.CanonicalVersion(version) != version {
				return "", "", &ArchiveError{Entry: name, Reason: "version " + version + " is not canonical"}
			}
		}
		if !strings.HasPrefix(name, prefix) {
			return "", "", &ArchiveError{Entry: name, Reason: "outside " + prefix}
		}
		if name == prefix+"go.mod" {
			gomod = f
		}
	}
	if gomod == nil {
		return "", "", &ArchiveError{Reason: "no " + prefix + "go.mod"}
	}
	rc, err := gomod.Open()
	if err != nil {
		return "", "", &ArchiveError{Entry: gomod.Name, Reason: err.Error()}
	}
	defer rc.Close()
	text, err := io.ReadAll(io.LimitReader(rc, maxDocument))
	if err != nil {
		return "", "", &ArchiveError{Entry: gomod.Name, Reason: err.Error()}
	}
	if declared := modfile.ModulePath(text); declared != modPath {
		return "", "", &ArchiveError{Entry: gomod.Name, Reason: "declares module " + declared + ", not " + modPath}
	}
	return modPath, version, nil
}
