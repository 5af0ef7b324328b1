package supervise_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/agentrt/agentrt/supervise"
)

// ResolveWorker reads the worker a control request's reference reaches
// now by the supervisor's rule (§3.6): a node id is itself; a direct
// child's label names its newest worker; a nested worker's label, the
// run id and a label not spawned yet resolve to nothing (the supervisor
// resolves those when it takes the request). Torn and duplicated lines
// are tolerated.
func TestResolveWorker(t *testing.T) {
	dir := t.TempDir()
	lines := `{"id":"spawn:r:s1","kind":"spawn","atMs":1,"node":"r:s1","label":"note"}
{"id":"spawn:r:s1","kind":"spawn","atMs":1,"node":"r:s1","label":"other"}
{"id":"settle:r:s1","kind":"settle","atMs":2,"node":"r:s1","label":"note","state":"cancelled"}
{"id":"spawn:r:s1:s1","kind":"spawn","atMs":3,"node":"r:s1:s1","label":"deep"}
{"id":"spawn:r:s2","kind":"spawn","atMs":4,"node":"r:s2","label":"note"}
{"id":"spawn:r:s3","kind":"spawn","atMs":5,"node":"r:s3","label":"writer"}
{"id":"spawn:r:s4","kind":"spa`
	if err := os.WriteFile(filepath.Join(dir, supervise.ProgressFile), []byte(lines), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		ref  string
		want supervise.NodeID
	}{
		{"note", "r:s2"},
		{"writer", "r:s3"},
		{"r:s1", "r:s1"},
		{"r:s1:s1", "r:s1:s1"},
		{"deep", ""},
		{"other", ""},
		{"r", ""},
		{"unspawned", ""},
	} {
		got, ok, err := supervise.ResolveWorker(t.Context(), dir, tc.ref)
		if err != nil || got != tc.want || ok != (tc.want != "") {
			t.Errorf("ResolveWorker(%q) = %q, %v, %v; want %q", tc.ref, got, ok, err, tc.want)
		}
	}
	if _, ok, err := supervise.ResolveWorker(t.Context(), t.TempDir(), "note"); ok || err == nil {
		t.Errorf("a run dir without progress: ok %v, err %v; want an error", ok, err)
	}
}
