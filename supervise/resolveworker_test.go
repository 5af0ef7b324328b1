package supervise_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/agentrt/agentrt/journal"
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

// The spawn journal is appended before progress.ndjson, whose writer
// runs on its own: a worker the journal holds is resolved though
// progress does not name it yet, so `agentrt steer RUN LABEL` run twice
// just after a spawn derives the same operation id both times (it made
// two requests of one steer when the first run read only progress:
// internal/cli TestTopLevelSteerAndCancelByRunID, once in a CI run).
func TestResolveWorkerReadsTheSpawnJournalBeforeProgress(t *testing.T) {
	dir := t.TempDir()
	j, err := journal.Open(filepath.Join(dir, supervise.SpawnJournalFile), journal.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := j.AppendOf(t.Context(),
		supervise.Record{Kind: supervise.KindSpawned, Node: "r", Profile: "manager"},
		supervise.Record{Kind: supervise.KindSpawned, Node: "r:s1", Profile: "note-writer", Label: "note"},
		supervise.Record{Kind: supervise.KindSpawned, Node: "r:s2", Profile: "writer"},
	); err != nil {
		t.Fatal(err)
	}
	if err := j.Close(); err != nil {
		t.Fatal(err)
	}
	// progress.ndjson lags: it names no worker yet.
	if err := os.WriteFile(filepath.Join(dir, supervise.ProgressFile), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	for ref, want := range map[string]supervise.NodeID{"note": "r:s1", "writer": "r:s2", "r:s1": "r:s1", "r": "", "note-writer": ""} {
		got, ok, err := supervise.ResolveWorker(t.Context(), dir, ref)
		if err != nil || got != want || ok != (want != "") {
			t.Errorf("ResolveWorker(%q) = %q, %v, %v; want %q", ref, got, ok, err, want)
		}
	}
}
