package cli_test

import (
	"context"
	"strings"
	"testing"

	"github.com/agentrt/agentrt/supervise"
)

// §3.6 continuityByProfile through the binary: with --continuity
// note-writer=resume the manager's second spawn of label "note", which
// names no continuity, re-attaches to the settled first one (its
// journaled spawn says resume, resumeOf rel:s1); without the flag, or
// with note-writer=fresh, it is a fresh worker. The first spawn, with
// nothing to resume, is fresh either way (the declared default degrades).
func TestSuperviseContinuityFlag(t *testing.T) {
	script := managerScript(t, `{"turns": [`+spawnNote+`, `+awaitOne+`, `+spawnNote+`, `+awaitOne+`, `+answerDone+`]}`)
	for _, tc := range []struct {
		name  string
		flags []string
		want  map[string]string // spawned node -> continuity/resumeOf
	}{
		{"resume", []string{"--continuity", "note-writer=resume"}, map[string]string{"rel:s1": "/", "rel:s2": "resume/rel:s1"}},
		{"fresh", []string{"--continuity", "note-writer=fresh"}, map[string]string{"rel:s1": "/", "rel:s2": "/"}},
		{"none", nil, map[string]string{"rel:s1": "/", "rel:s2": "/"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			out, errOut, code := run(t, "", superviseArgs(t, script, dir, append(tc.flags, "--worker-tokens", "1000", "--json")...)...)
			if code != 0 {
				t.Fatalf("exit %d\n%s%s", code, out, errOut)
			}
			recs, _, err := supervise.ReadRunDir(context.Background(), dir)
			if err != nil {
				t.Fatal(err)
			}
			got := map[string]string{}
			for _, r := range recs {
				if r.Kind == supervise.KindSpawned {
					got[string(r.Node)] = r.Continuity + "/" + string(r.ResumeOf)
				}
			}
			for node, want := range tc.want {
				if got[node] != want {
					t.Errorf("spawn %s journaled continuity/resumeOf %q, want %q (all: %v)", node, got[node], want, got)
				}
			}
		})
	}
}

// A --continuity flag that names no --worker profile, a mode other than
// resume or fresh, a missing mode, or one profile twice is a usage error
// (exit 2) that says what to give, before anything runs.
func TestSuperviseContinuityFlagRefusals(t *testing.T) {
	script := managerScript(t, `{"turns": [`+spawnNote+`, `+awaitOne+`, `+answerDone+`]}`)
	for _, tc := range []struct {
		flags []string
		want  string
	}{
		{[]string{"--continuity", "nobody=resume"}, `no --worker profile "nobody" (known: note-writer)`},
		{[]string{"--continuity", "note-writer=later"}, `the mode is resume or fresh, not "later"`},
		{[]string{"--continuity", "note-writer"}, "give WORKER=resume or WORKER=fresh"},
		{[]string{"--continuity", "note-writer=resume", "--continuity", "note-writer=fresh"}, `names worker profile "note-writer" twice`},
	} {
		dir := t.TempDir()
		out, errOut, code := run(t, "", superviseArgs(t, script, dir, tc.flags...)...)
		if code != 2 || !strings.Contains(errOut, tc.want) {
			t.Errorf("%v: exit %d, stderr %q; want exit 2 saying %q\n%s", tc.flags, code, errOut, tc.want, out)
		}
	}
}
