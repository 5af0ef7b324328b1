package wsarchive

import (
	"github.com/agentrt/agentrt/candidate"
	"github.com/agentrt/agentrt/canonjson"
)

// Manifest returns the workspace manifest material of files, in their
// order: for each file its path, mode, "sha256:" digest and byte length.
func Manifest(files []File) candidate.WorkspaceManifestMaterial {
	m := candidate.WorkspaceManifestMaterial{
		Kind:  candidate.KindWorkspaceManifestValue,
		Files: make([]candidate.ManifestFile, 0, len(files)),
	}
	for _, f := range files {
		m.Files = append(m.Files, candidate.ManifestFile{
			Path:       f.Path,
			Mode:       int64(f.Mode),
			SHA256:     canonjson.DigestBytes(f.Data),
			ByteLength: int64(len(f.Data)),
		})
	}
	return m
}

// Match reports whether the decoded files reproduce material exactly:
// the same kind and the same rows, in the same order, with the same path,
// mode, byte length and sha256. The *[Error] (code [CodeMismatch]) names
// the first path that differs and how.
func Match(a *Archive, material *candidate.WorkspaceManifestMaterial) error {
	if material.Kind != candidate.KindWorkspaceManifestValue {
		return errorf(CodeMismatch, "", "manifest kind is %q", material.Kind)
	}
	got := Manifest(a.Files).Files
	want := material.Files
	inManifest := make(map[string]bool, len(want))
	for _, w := range want {
		inManifest[w.Path] = true
	}
	inArchive := make(map[string]bool, len(got))
	for _, g := range got {
		inArchive[g.Path] = true
	}
	for i := 0; i < len(got) || i < len(want); i++ {
		switch {
		case i >= len(want):
			return errorf(CodeMismatch, got[i].Path, "archive file is not in the manifest")
		case i >= len(got):
			return errorf(CodeMismatch, want[i].Path, "manifest file is not in the archive")
		}
		g, w := got[i], want[i]
		switch {
		case g.Path != w.Path && !inManifest[g.Path]:
			return errorf(CodeMismatch, g.Path, "archive file is not in the manifest")
		case g.Path != w.Path && !inArchive[w.Path]:
			return errorf(CodeMismatch, w.Path, "manifest file is not in the archive")
		case g.Path != w.Path:
			return errorf(CodeMismatch, w.Path, "manifest row %d is %q in the archive", i, g.Path)
		case g.Mode != w.Mode:
			return errorf(CodeMismatch, g.Path, "archive mode %#o, manifest mode %#o", g.Mode, w.Mode)
		case g.ByteLength != w.ByteLength:
			return errorf(CodeMismatch, g.Path, "archive has %d bytes, manifest %d", g.ByteLength, w.ByteLength)
		case g.SHA256 != w.SHA256:
			return errorf(CodeMismatch, g.Path, "archive bytes hash to %s, manifest says %s", g.SHA256, w.SHA256)
		}
	}
	return nil
}
