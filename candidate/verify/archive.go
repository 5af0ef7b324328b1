package verify

import (
	"github.com/agentrt/agentrt/candidate"
	"github.com/agentrt/agentrt/candidate/wsarchive"
)

// workspaceKind says which workspace a snapshot is: only a task
// workspace may carry repository evidence in its archive (§21.4).
type workspaceKind int

const (
	candidateWorkspace workspaceKind = iota // candidate code, knowledge or memory
	taskWorkspace
)

// archiveContent applies §22 step 7's archive rule to a snapshot whose
// manifest already verified: an archive in the reference layout must
// decode strictly (canonical re-encoding included), carry repository
// evidence only in a task workspace, and reproduce the manifest's files,
// modes and bytes exactly; else workspace-archive-mismatch. An archive
// in another encoding stays ArchiveUnverified.
func archiveContent(path string, w *candidate.WorkspaceSnapshotEvidence, archive []byte, kind workspaceKind) (string, *Issue) {
	if !wsarchive.IsReferenceLayout(archive) {
		return ArchiveUnverified, nil
	}
	reject := func(message string) (string, *Issue) {
		return "", &Issue{Code: CodeWorkspaceArchiveMismatch, Path: path + "/archive", Message: message}
	}
	a, err := wsarchive.Decode(archive, wsarchive.DefaultLimits())
	if err != nil {
		return reject(err.Error())
	}
	if a.Repository != nil && kind != taskWorkspace {
		return reject("only a task workspace archive may carry repository metadata and a git bundle")
	}
	if err := wsarchive.Match(a, &w.Material); err != nil {
		return reject(err.Error())
	}
	return ArchiveVerified, nil
}
