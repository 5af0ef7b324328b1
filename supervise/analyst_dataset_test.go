package supervise_test

import (
	"context"
	"strings"
	"testing"

	"github.com/agentrt/agentrt/contract"
	"github.com/agentrt/agentrt/providers/scripted"
	"github.com/agentrt/agentrt/supervise"
)

// An analyst's dataset is the analysed worker first, then the run's
// other settled workers in admission order (analysts left out); a
// singleTrace lens sees the analysed worker alone.
func TestAnalystDatasetOrder(t *testing.T) {
	for _, tc := range []struct {
		group supervise.ToolGroup
		want  []string
	}{
		{supervise.ToolGroupAll, []string{"run1:s2", "run1:s1", "run1:s3"}},
		{supervise.ToolGroupSingleTrace, []string{"run1:s2"}},
	} {
		t.Run(string(tc.group), func(t *testing.T) {
			m := &analystModel{reply: func(turn int, _ []contract.ChatMessage) []contract.ChatEvent {
				if turn == 0 {
					return []contract.ChatEvent{toolCall("o", "getDatasetOverview", map[string]any{}), managerUsage(20, 5, 0.0001)}
				}
				return []contract.ChatEvent{scripted.Text("seen"), managerUsage(30, 6, 0.0001)}
			}}
			lens := testLens(tc.group, nil)
			o := baseOptions(t, analystExecutor(t), nil)
			o.Analysts, o.AnalystModel = []supervise.Lens{lens}, m
			o.Budget.Iterations = new(int64(40))
			o.Brain = supervise.BrainFunc(func(ctx context.Context, c *supervise.Coordinator, _ string) (supervise.BrainReport, error) {
				for _, task := range []string{"alpha one", "alpha two", "alpha three"} {
					tool(t, ctx, c, supervise.VerbSpawnWorker, spawnArgs(task))
					tool(t, ctx, c, supervise.VerbAwaitEvent, map[string]any{"timeoutMs": 60000, "kinds": []string{"settled"}})
				}
				tool(t, ctx, c, supervise.VerbRunAnalyst, map[string]any{"kind": lens.ID, "workerId": "run1:s2"})
				tool(t, ctx, c, supervise.VerbAwaitEvent, map[string]any{"timeoutMs": 60000, "kinds": []string{"finding"}})
				return supervise.BrainReport{}, nil
			})
			if _, err := supervise.Supervise(context.Background(), managerProfile(t, supervise.VerbSpawnWorker), "t", o); err != nil {
				t.Fatal(err)
			}
			if len(m.results) == 0 {
				t.Fatal("the analyst's tool was not answered")
			}
			overview := m.results[0]
			last := -1
			for _, id := range tc.want {
				at := strings.Index(overview, `"`+id+`"`)
				if at < 0 || at < last {
					t.Fatalf("the dataset is not %v in that order:\n%s", tc.want, overview)
				}
				last = at
			}
			for _, id := range []string{"run1:s1", "run1:s2", "run1:s3"} {
				if !strings.Contains(overview, `"`+id+`"`) && contains(tc.want, id) {
					t.Fatalf("the dataset lacks %s:\n%s", id, overview)
				}
				if strings.Contains(overview, `"`+id+`"`) && !contains(tc.want, id) {
					t.Fatalf("the dataset holds %s:\n%s", id, overview)
				}
			}
		})
	}
}

func contains(ids []string, id string) bool {
	for _, x := range ids {
		if x == id {
			return true
		}
	}
	return false
}
