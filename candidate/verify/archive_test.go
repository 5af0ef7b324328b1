package verify_test

import (
	"testing"

	"github.com/agentrt/agentrt/candidate/verify"
	"github.com/agentrt/agentrt/candidate/wsarchive"
)

// TestWorkspaceArchiveContent: §22 step 7 over A4's candidate workspace
// with real archives. One in the reference layout (§21.4) that
// reproduces the manifest is "verified"; one that decodes but differs in
// a mode or a byte, is not canonical, or carries repository evidence in
// a candidate workspace is workspace-archive-mismatch; another encoding
// stays "unverified".
func TestWorkspaceArchiveContent(t *testing.T) {
	g := newGitFixture(t)
	files := func() []wsarchive.File {
		return []wsarchive.File{
			{Path: "README.md", Mode: 0o644, Data: []byte("hello\nworld\n")},
			{Path: "src/agent.js", Mode: 0o755, Data: []byte("#!/usr/bin/env node\nconsole.log(\"v2\")\n")},
		}
	}
	encode := func(fs []wsarchive.File, repo *wsarchive.Repository) []byte {
		t.Helper()
		data, err := wsarchive.Encode(fs, repo)
		if err != nil {
			t.Fatal(err)
		}
		return data
	}
	good := encode(files(), nil)
	modeChanged := files()
	modeChanged[1].Mode = 0o644
	byteChanged := files()
	byteChanged[1].Data = []byte("#!/usr/bin/env node\nconsole.log(\"v3\")\n")
	bundle := []byte("# v2 git bundle\n")
	withRepo := encode(files(), &wsarchive.Repository{HeadCommit: baseCommitA4, HeadTree: baseTreeA4, Bundle: bundle})
	for _, tc := range []struct {
		name    string
		archive []byte
		state   string // the record's archiveContent when accepted
		codes   []string
	}{
		{"reference layout, matching", good, verify.ArchiveVerified, nil},
		{"another mode", encode(modeChanged, nil), "", []string{verify.CodeWorkspaceArchiveMismatch}},
		{"another byte", encode(byteChanged, nil), "", []string{verify.CodeWorkspaceArchiveMismatch}},
		{"not canonical", append(append([]byte{}, good...), make([]byte, 512)...), "", []string{verify.CodeWorkspaceArchiveMismatch}},
		{"repository in a candidate workspace", withRepo, "", []string{verify.CodeWorkspaceArchiveMismatch}},
		{"another encoding", []byte("PK\x03\x04 a zip archive, say"), verify.ArchiveUnverified, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := a4(t, g.patch, g.tree)
			b["execution"].(obj)["workspace"].(obj)["archive"] = embedded(tc.archive)
			rec := run(t, seal(t, b), g.opts, tc.codes...)
			if tc.codes != nil {
				if len(rec.Workspaces) != 0 {
					t.Errorf("a rejected workspace was recorded: %+v", rec.Workspaces)
				}
				if rec.Issues[0].Path != "/execution/workspace/archive" {
					t.Errorf("issue %+v", rec.Issues[0])
				}
				return
			}
			if len(rec.Workspaces) != 1 || rec.Workspaces[0].ArchiveContent != tc.state {
				t.Errorf("workspaces %+v, want archiveContent %q", rec.Workspaces, tc.state)
			}
		})
	}
}
