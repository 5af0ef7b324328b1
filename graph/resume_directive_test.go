package graph_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentrt/agentrt/graph"
	"github.com/agentrt/agentrt/supervise"
)

// directiveRun runs resumeGraph's graph to its end in a new run dir and
// returns the graph, its options (Resume set) and the run dir.
func directiveRun(t *testing.T) (graph.Graph, graph.Options, string) {
	t.Helper()
	g, o, err := resumeGraph()
	if err != nil {
		t.Fatal(err)
	}
	exec, err := newResumeExecutor(reviewPasses)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	o.Supervise.Executor, o.Supervise.RunDir = exec, dir
	if _, err := graph.RunGraph(context.Background(), g, o); err != nil {
		t.Fatal(err)
	}
	o.Registry, err = o.Registry.With(map[string]string{"delegate/reviewer/v2": "Review the patch again, more strictly."})
	if err != nil {
		t.Fatal(err)
	}
	return g, o, dir
}

// withReviewerDirective returns g with its driver->reviewer edge given
// directive d.
func withReviewerDirective(g graph.Graph, d string) graph.Graph {
	g.Edges = append([]graph.Edge(nil), g.Edges...)
	for i, e := range g.Edges {
		if e.ID() == "delegates:driver->reviewer" {
			g.Edges[i].Directive = d
		}
	}
	return g
}

// RES-03 / behaviour 46 for runGraph (§3.7): an edge is its id and its
// directive. Resuming a run whose journal ledgered the reviewer edge
// under delegate/reviewer/v1 with a graph that gives that edge
// delegate/reviewer/v2 is refused before anything runs, with the
// *supervise.ResumeError a changed topology gets, naming both
// directives; the same graph with the journal's directive resumes.
func TestGraphResumeRefusesAChangedDirective(t *testing.T) {
	g, o, dir := directiveRun(t)
	before, err := os.ReadFile(filepath.Join(dir, supervise.SpawnJournalFile))
	if err != nil {
		t.Fatal(err)
	}
	var re *supervise.ResumeError
	_, err = graph.RunGraph(context.Background(), withReviewerDirective(g, "delegate/reviewer/v2"), o)
	if !errors.As(err, &re) {
		t.Fatalf("resuming with a changed directive: %v, want a *supervise.ResumeError", err)
	}
	for _, s := range []string{"delegates:driver->reviewer", "delegate/reviewer/v1", "delegate/reviewer/v2"} {
		if !strings.Contains(re.Reason, s) {
			t.Errorf("the refusal %q does not name %s", re.Reason, s)
		}
	}
	after, err := os.ReadFile(filepath.Join(dir, supervise.SpawnJournalFile))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(before, after) {
		t.Error("the refused resume changed the journal")
	}
	if _, err := graph.RunGraph(context.Background(), g, o); err != nil {
		t.Errorf("resuming with the journal's own directives: %v", err)
	}
}

// A journal written before edge rows carried their directive has none
// to compare: its edges are compared by id alone, so it still resumes
// whatever directive the graph now gives them (unknown is not a
// mismatch), while an edge it does not know is still refused.
func TestGraphResumeOfAJournalWithoutDirectives(t *testing.T) {
	g, o, dir := directiveRun(t)
	path := filepath.Join(dir, supervise.SpawnJournalFile)
	stripped := stripEdgeDirectives(t, path)
	if stripped == 0 {
		t.Fatal("the run journaled no edge rows to strip")
	}
	if _, err := graph.RunGraph(context.Background(), withReviewerDirective(g, "delegate/reviewer/v2"), o); err != nil {
		var re *supervise.ResumeError
		if errors.As(err, &re) {
			t.Fatalf("an old journal (no directives) was refused: %v", err)
		}
		t.Fatal(err)
	}
	g.Edges = g.Edges[:2] // the lens edge is gone
	var re *supervise.ResumeError
	if _, err := graph.RunGraph(context.Background(), g, o); !errors.As(err, &re) || !strings.Contains(re.Reason, "analyzes:failure-triage:coder->driver") {
		t.Errorf("an old journal resumed by a graph without one of its edges: %v, want a *supervise.ResumeError naming it", err)
	}
}

// stripEdgeDirectives rewrites the journal at path as an older writer
// wrote it: its edge records' data without "directive", and no graph
// (topology) record. It returns how many edge records it changed.
func stripEdgeDirectives(t *testing.T, path string) int {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	n := 0
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(nil, 1<<24)
	for sc.Scan() {
		line := sc.Bytes()
		var rec map[string]json.RawMessage
		if err := json.Unmarshal(line, &rec); err != nil {
			t.Fatalf("a journal line does not decode: %v", err)
		}
		if string(rec["kind"]) == `"`+supervise.KindGraph+`"` {
			continue
		}
		if string(rec["kind"]) == `"`+supervise.KindEdge+`"` {
			var d map[string]json.RawMessage
			if err := json.Unmarshal(rec["data"], &d); err != nil {
				t.Fatal(err)
			}
			if _, ok := d["directive"]; ok {
				delete(d, "directive")
				n++
			}
			if rec["data"], err = json.Marshal(d); err != nil {
				t.Fatal(err)
			}
			if line, err = json.Marshal(rec); err != nil {
				t.Fatal(err)
			}
		}
		out.Write(line)
		out.WriteByte('\n')
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, out.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	return n
}
