package conformance

import (
	"archive/zip"
	"bytes"
	"io"
	"strings"

	"golang.org/x/mod/modfile"
	"golang.org/x/mod/module"
	modzip "golang.org/x/mod/zip"
)

// CreateArchive writes the module zip of revision (a commit, tag or
// "HEAD") of the git repository at repoRoot, for the module at its root,
// as version: the bytes `go mod download` would serve for modPath@version.
func CreateArchive(w io.Writer, repoRoot, modPath, version, revision string) error {
	return modzip.CreateFromVCS(w, module.Version{Path: modPath, Version: version}, repoRoot, revision, "")
}

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
