package cli_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/store"
)

// A supervised run that ended is resumed again (agentrt supervise
// --resume on its journal): the journaled result again, no model called,
// and the store's record of the run left exactly as the run's end wrote
// it — the same document, the same revision. Tried with the journal in
// the run dir and in the store (SQLite and PostgreSQL).
func TestAnEndedRunResumedAgainKeepsItsRecord(t *testing.T) {
	for _, v := range []struct {
		name    string
		inStore bool
		backend int
	}{{"file journal", false, 0}, {"sqlite journal in store", true, 0}, {"postgres journal in store", true, 1}} {
		t.Run(v.name, func(t *testing.T) {
			backend := graphStoreBackends[v.backend]
			storeFlags := backend.flags(t)
			st := backend.open(t, storeFlags)
			defer st.Close()
			e := newCostEndpoint(t, "alpha", "beta")
			t.Setenv("OPENAI_API_KEY", "sk-test-cost-7f2")
			e.Start()
			mgr := writeFile(t, "manager.json", `{"name": "manager", "harness": "cli-base", "model": {"default": "gpt-manager"},
		"tools": {"agent_runtime_coordination_spawn_worker": true, "agent_runtime_coordination_await_event": true}}`)
			wrk := writeFile(t, "writer.json", `{"name": "writer", "harness": "cli-base", "model": {"default": "gpt-writer"}}`)
			args := append([]string{"supervise", mgr, "--worker", wrk, "--task", "write the notes", "--provider", "openai",
				"--base-url", e.URL + "/v1/", "--expect", "DONE", "--run-id", "costs", "--workspace", t.TempDir(), "--run-dir", t.TempDir(),
				"--budget-tokens", "5000", "--worker-tokens", "1000", "--iterations", "4", "--json"}, storeFlags...)
			if v.inStore {
				args = append(args, "--journal-in-store")
			}
			if out, errOut, code := run(t, "", args...); code != 0 {
				t.Fatalf("run: exit %d\n%s%s", code, out, errOut)
			}
			before, err := st.GetRun(context.Background(), "costs")
			if err != nil {
				t.Fatal(err)
			}
			e.mu.Lock()
			calls := e.calls
			e.mu.Unlock()
			time.Sleep(10 * time.Millisecond) // a rewrite would show in updatedAt
			out, errOut, code := run(t, "", append(args, "--resume")...)
			if code != 0 || !strings.Contains(out, `"winner"`) {
				t.Fatalf("resume: exit %d\n%s%s", code, out, errOut)
			}
			e.mu.Lock()
			again := e.calls - calls
			e.mu.Unlock()
			if again != 0 {
				t.Errorf("the resume of an ended run called the endpoint %d times", again)
			}
			after, err := st.GetRun(context.Background(), "costs")
			if err != nil {
				t.Fatal(err)
			}
			// A journal in the store is its run too: the resume takes its
			// lease (a write), so only a record of its own keeps its
			// revision.
			if !v.inStore && (after.Revision != before.Revision || !after.UpdatedAt.Equal(before.UpdatedAt)) {
				t.Errorf("the record was written again: revision %d → %d, updated %v → %v", before.Revision, after.Revision, before.UpdatedAt, after.UpdatedAt)
			}
			recOf := func(r store.Run) string {
				if v.inStore {
					m, _ := r.Doc.Get("record")
					return string(canonjson.Marshal(m))
				}
				return string(canonjson.Marshal(r.Doc))
			}
			if b, a := recOf(before), recOf(after); b != a {
				t.Errorf("the record changed:\nbefore %s\nafter  %s", b, a)
			}
		})
	}
}
