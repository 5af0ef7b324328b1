package supervise_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/contract"
	"github.com/agentrt/agentrt/ledger"
	"github.com/agentrt/agentrt/profile"
	"github.com/agentrt/agentrt/supervise"
	"github.com/agentrt/agentrt/tools"
	"github.com/google/go-cmp/cmp"
)

// withQuestions runs a manager that asks itself n questions (the root's
// ask_parent keeps each for list_questions) and then calls inspect with
// its list_questions verb.
func withQuestions(t *testing.T, n int, inspect func(ctx context.Context, c *supervise.Coordinator, list contract.Tool)) {
	t.Helper()
	o := baseOptions(t, supervise.ExecutorFunc(func(context.Context, supervise.Work) (supervise.WorkResult, error) {
		return supervise.WorkResult{}, errors.New("no worker is spawned here")
	}), nil)
	o.Brain = supervise.BrainFunc(func(ctx context.Context, c *supervise.Coordinator, _ string) (supervise.BrainReport, error) {
		for i := range n {
			if _, err := c.AskParent(ctx, supervise.AskArgs{Level: "driver", Urgency: supervise.UrgencyContinueWithout, Question: fmt.Sprintf("question %d?", i+1)}); err != nil {
				return supervise.BrainReport{}, err
			}
		}
		all, err := c.Tools()
		if err != nil {
			return supervise.BrainReport{}, err
		}
		for _, tl := range all {
			if tl.Name == supervise.ToolPrefix+supervise.VerbListQuestions {
				inspect(ctx, c, tl)
				return supervise.BrainReport{}, nil
			}
		}
		return supervise.BrainReport{}, errors.New("no list_questions verb")
	})
	if _, err := supervise.Supervise(context.Background(), managerProfile(t, supervise.VerbListQuestions), "t", o); err != nil {
		t.Fatal(err)
	}
}

// questionPage is one list_questions reply as the brain reads it.
type questionPage struct {
	ids        []string
	more       bool
	nextCursor *float64
}

func readQuestionPage(t *testing.T, v canonjson.Value) questionPage {
	t.Helper()
	reply := canonjson.Marshal(v)
	if len(reply) > 300 {
		reply = append(reply[:300:300], "…"...)
	}
	var p questionPage
	qs, ok := canonjson.Resolve(v, "/questions")
	if !ok || qs.Kind() != canonjson.Array {
		t.Fatalf("list_questions reply has no questions array: %s", reply)
	}
	for i := range qs.Len() {
		id, _ := qs.Items()[i].Get("id")
		p.ids = append(p.ids, id.Str())
	}
	more, ok := canonjson.Resolve(v, "/more")
	if !ok || more.Kind() != canonjson.Bool {
		t.Fatalf("list_questions reply does not say whether more remain: %s", reply)
	}
	p.more = more.Bool()
	if next, ok := canonjson.Resolve(v, "/nextCursor"); ok {
		f := next.Float()
		p.nextCursor = &f
	}
	return p
}

// TestListQuestionsPages: list_questions returns the manager's questions
// in the order asked, a page of at most limit (DefaultQuestionPage when
// omitted) at a time from cursor (the previous page's nextCursor), and
// says whether more remain; paging through them all lists each once.
func TestListQuestionsPages(t *testing.T) {
	const n = 2*supervise.MaxQuestionPage + 7
	want := make([]string, n)
	for i := range want {
		want[i] = fmt.Sprintf("q%d", i+1)
	}
	withQuestions(t, n, func(ctx context.Context, c *supervise.Coordinator, list contract.Tool) {
		tests := []struct {
			name  string
			limit int
			want  int // the page size
		}{
			{name: "default page", limit: 0, want: supervise.DefaultQuestionPage},
			{name: "small pages", limit: 33, want: 33},
			{name: "largest pages", limit: supervise.MaxQuestionPage, want: supervise.MaxQuestionPage},
		}
		for _, tt := range tests {
			var got []string
			cursor := 0
			for pages := 0; ; pages++ {
				if pages > n {
					t.Fatalf("%s: paging never ends", tt.name)
				}
				args := map[string]any{}
				if cursor != 0 {
					args["cursor"] = cursor
				}
				if tt.limit != 0 {
					args["limit"] = tt.limit
				}
				v, err := list.Run(ctx, toValue(t, args))
				if err != nil {
					t.Fatalf("%s: list_questions(%v): %v", tt.name, args, err)
				}
				p := readQuestionPage(t, v)
				if len(p.ids) > tt.want || (p.more && len(p.ids) != tt.want) {
					t.Fatalf("%s: page at %d holds %d questions (more %v), want %d", tt.name, cursor, len(p.ids), p.more, tt.want)
				}
				got = append(got, p.ids...)
				if !p.more {
					if p.nextCursor != nil {
						t.Errorf("%s: the last page names a next cursor %v", tt.name, *p.nextCursor)
					}
					break
				}
				if p.nextCursor == nil || int(*p.nextCursor) != cursor+len(p.ids) {
					t.Fatalf("%s: page at %d: nextCursor %v, want %d", tt.name, cursor, p.nextCursor, cursor+len(p.ids))
				}
				cursor = int(*p.nextCursor)
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("%s: paged questions (-want +got):\n%s", tt.name, diff)
			}
		}
		// Past the end: an empty last page.
		v, err := list.Run(ctx, toValue(t, map[string]any{"cursor": n + 5}))
		if err != nil {
			t.Fatal(err)
		}
		if p := readQuestionPage(t, v); len(p.ids) != 0 || p.more {
			t.Errorf("page past the end: %+v", p)
		}
		// Arguments out of range, unknown or of the wrong type are refused
		// with an ArgumentsError naming the member.
		bad := []struct {
			name string
			args map[string]any
			path string
		}{
			{name: "limit over the page bound", args: map[string]any{"limit": supervise.MaxQuestionPage + 1}, path: "/limit"},
			{name: "negative limit", args: map[string]any{"limit": -1}, path: "/limit"},
			{name: "negative cursor", args: map[string]any{"cursor": -1}, path: "/cursor"},
			{name: "cursor of the wrong type", args: map[string]any{"cursor": "q3"}, path: "/cursor"},
			{name: "unknown member", args: map[string]any{"offset": 3}, path: ""},
		}
		for _, tc := range bad {
			_, err := list.Run(ctx, toValue(t, tc.args))
			var ae *tools.ArgumentsError
			if !errors.As(err, &ae) || (tc.path != "" && ae.Path != tc.path) {
				t.Errorf("%s: %v, want an ArgumentsError at %q", tc.name, err, tc.path)
			}
		}
	})
}

func toValue(t *testing.T, x any) canonjson.Value {
	t.Helper()
	v, err := canonjson.ToValue(x)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// BenchmarkListQuestionsVerb: one list_questions call (first page) with
// n questions asked; its cost should not grow with n.
func BenchmarkListQuestionsVerb(b *testing.B) {
	for _, n := range []int{2000, 20000} {
		b.Run(fmt.Sprintf("questions=%d", n), func(b *testing.B) {
			manager, err := profile.Parse([]byte(`{"name": "m", "harness": "cli-base", "tools": {"agent_runtime_coordination_list_questions": true}}`))
			if err != nil {
				b.Fatal(err)
			}
			writer, err := profile.Parse([]byte(writerProfile))
			if err != nil {
				b.Fatal(err)
			}
			o := supervise.Options{Profiles: map[string]*profile.Profile{"writer": writer}, Budget: ledger.Budget{Tokens: i64(1 << 40), Iterations: i64(1 << 40), MicroUSD: i64(1 << 40)},
				PerWorker: worker, Deliverable: doneCheck, RunID: "run1",
				Executor: supervise.ExecutorFunc(func(context.Context, supervise.Work) (supervise.WorkResult, error) {
					return supervise.WorkResult{}, errors.New("no worker is spawned here")
				})}
			o.Brain = supervise.BrainFunc(func(ctx context.Context, c *supervise.Coordinator, _ string) (supervise.BrainReport, error) {
				for i := range n {
					if _, err := c.AskParent(ctx, supervise.AskArgs{Level: "driver", Urgency: supervise.UrgencyContinueWithout, Question: fmt.Sprintf("question %d?", i+1)}); err != nil {
						return supervise.BrainReport{}, err
					}
				}
				all, err := c.Tools()
				if err != nil {
					return supervise.BrainReport{}, err
				}
				for _, tl := range all {
					if tl.Name != supervise.ToolPrefix+supervise.VerbListQuestions {
						continue
					}
					args, err := canonjson.Decode([]byte(`{}`))
					if err != nil {
						return supervise.BrainReport{}, err
					}
					b.ReportAllocs()
					for b.Loop() {
						if _, err := tl.Run(ctx, args); err != nil {
							return supervise.BrainReport{}, err
						}
					}
				}
				return supervise.BrainReport{}, nil
			})
			if _, err := supervise.Supervise(context.Background(), manager, "t", o); err != nil {
				b.Fatal(err)
			}
		})
	}
}
