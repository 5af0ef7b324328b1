package supervise_test

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"testing"
	"time"

	"github.com/agentrt/agentrt/contract"
	"github.com/agentrt/agentrt/profile"
	"github.com/agentrt/agentrt/providers/anthropic"
	"github.com/agentrt/agentrt/providers/openai"
	"github.com/agentrt/agentrt/supervise"
)

// endingEndpoint is a provider endpoint (OpenAI Chat Completions or
// Anthropic Messages, by api) whose every answer starts a stream with
// some usage and text and then ends as mode says: "eof" closes the body
// cleanly with no final event (no finish_reason/[DONE], no
// message_delta/message_stop); "truncated" sends half an event's JSON
// and closes; "silent" sends the 200 and its headers, then nothing
// until the client goes away.
func endingEndpoint(t *testing.T, api, mode string) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(http.StatusOK)
		w.(http.Flusher).Flush()
		if mode == "silent" {
			<-r.Context().Done()
			return
		}
		if mode == "empty" {
			return
		}
		switch api {
		case "openai":
			const head = `{"id":"c1","object":"chat.completion.chunk","created":1,"model":"gpt-test",`
			fmt.Fprint(w, "data: "+head+`"choices":[{"index":0,"delta":{"role":"assistant","content":"DO"},"finish_reason":null}]}`+"\n\n")
			if mode == "truncated" {
				fmt.Fprint(w, "data: "+head+`"choices":[{"index":0,"delta":{"content":"NE"`)
			}
			if mode == "reset" {
				fmt.Fprint(w, "data: "+head+`"choices":[{"index":0,"delta":{"content":"NE"},"finish_reason":"stop"}]}`+"\n\n")
				fmt.Fprint(w, "data: "+head+`"choices":[],"usage":{"prompt_tokens":9,"completion_tokens":2,"total_tokens":11}}`+"\n\n")
			}
		case "anthropic":
			fmt.Fprint(w, "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"model\":\"claude-test\",\"usage\":{\"input_tokens\":9,\"output_tokens\":1}}}\n\n"+
				"event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n"+
				"event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"DO\"}}\n\n")
			if mode == "truncated" {
				fmt.Fprint(w, "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_d")
			}
			if mode == "reset" {
				fmt.Fprint(w, "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"NE\"}}\n\n"+
					"event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":0}\n\n"+
					"event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\"},\"usage\":{\"output_tokens\":2}}\n\n")
			}
		}
		w.(http.Flusher).Flush()
		if mode == "reset" {
			resetConn(t, w)
		}
	}))
	t.Cleanup(srv.Close)
	return srv
}

// A worker whose provider stream ends early — cleanly with no final
// event, mid-event, or after the 200 with nothing more until the run's
// deadline — on OpenAI Chat Completions and on Anthropic Messages:
// the worker settles failed (never done, never delivered) with a
// reason, the manager's await is told of that settlement, its tokens
// are an unreported gap charged at the worker's ceiling (unknown, never
// 0), and Supervise returns within the run's deadline plus slack even
// though the HTTP client has no timeout of its own (behaviours 36, 41,
// 43; spec/runtime.md §7).
func TestWorkerProviderStreamEndingEarly(t *testing.T) {
	for _, api := range []string{"openai", "anthropic"} {
		for _, mode := range []string{"eof", "truncated", "silent", "empty", "reset"} {
			t.Run(api+"/"+mode, func(t *testing.T) {
				srv := endingEndpoint(t, api, mode)
				var p contract.Provider
				var err error
				var prof string
				switch api {
				case "openai":
					p, err = openai.NewProvider(openai.ProviderOptions{Options: openai.Options{BaseURL: srv.URL + "/v1/", APIKey: "k", Model: "gpt-test",
						HTTPClient: &http.Client{}}, ReportsUsage: true, StripModelPrefix: "openai/"})
					prof = `{"name": "writer", "harness": "cli-base", "model": {"provider": "openai", "default": "openai/gpt-test"}}`
				case "anthropic":
					p, err = anthropic.NewProvider(anthropic.ProviderOptions{Options: anthropic.Options{BaseURL: srv.URL, APIKey: "k", Model: "claude-test",
						HTTPClient: &http.Client{}}})
					prof = `{"name": "writer", "harness": "cli-base", "model": {"provider": "anthropic", "default": "anthropic/claude-test"}}`
				}
				if err != nil {
					t.Fatal(err)
				}
				o := baseOptions(t, &supervise.KernelExecutor{Provider: p, Store: newStore(t)}, nil)
				o.Profiles = map[string]*profile.Profile{"writer": mustProfile(t, prof)}
				o.Budget.MicroUSD, o.PerWorker.MicroUSD = nil, nil
				const deadline = 4 * time.Second
				o.Deadline = time.Now().Add(deadline)
				var told []supervise.Event
				o.Brain = supervise.BrainFunc(func(ctx context.Context, c *supervise.Coordinator, _ string) (supervise.BrainReport, error) {
					tool(t, ctx, c, supervise.VerbSpawnWorker, spawnArgs("write"))
					r, err := c.Await(ctx, supervise.AwaitArgs{TimeoutMS: 60_000})
					if r.Event != nil {
						told = append(told, *r.Event)
					}
					return supervise.BrainReport{}, err
				})
				start := time.Now()
				type outcome struct {
					res supervise.SupervisedResult
					err error
				}
				done := make(chan outcome, 1)
				go func() {
					res, err := supervise.Supervise(context.Background(), managerProfile(t, supervise.VerbSpawnWorker), "t", o)
					done <- outcome{res, err}
				}()
				var got outcome
				select {
				case got = <-done:
				case <-time.After(deadline + time.Minute):
					t.Fatalf("Supervise had not returned %v after its deadline", time.Minute)
				}
				took := time.Since(start)
				if took > deadline+30*time.Second {
					t.Errorf("Supervise returned after %v; its deadline was %v", took, deadline)
				}
				res := got.res
				t.Logf("returned after %v: status %s, reason %s, err %v", took.Round(time.Millisecond), res.Status, res.Reason, got.err)
				if len(res.Tree) == 1 {
					t.Logf("worker %s: %s", res.Tree[0].State, res.Tree[0].Reason)
				}
				if len(res.Tree) != 1 {
					t.Fatalf("tree %+v (err %v)", res.Tree, got.err)
				}
				w := res.Tree[0]
				if w.State == supervise.StateDone || res.Status == supervise.StatusWinner {
					t.Errorf("worker %s (%s), run %s %s: a stream that ended early won", w.State, w.Reason, res.Status, res.Reason)
				}
				if w.Reason == "" {
					t.Errorf("worker %s settled with no reason", w.State)
				}
				if mode != "silent" {
					// A silent stream is cut by the deadline, which also
					// ends the manager's await: it may be told "stopped"
					// instead of the settlement.
					if len(told) != 1 || told[0].WorkerID != w.ID || told[0].State != w.State || (told[0].Delivered != nil && *told[0].Delivered) {
						t.Errorf("the manager was told %+v; want the settlement of %s (%s)", told, w.ID, w.State)
					}
				}
				if res.Spent.TokensKnown || res.Spent.Tokens != 1000 {
					t.Errorf("spent tokens %d known %v; want the worker's ceiling 1000, unknown", res.Spent.Tokens, res.Spent.TokensKnown)
				}
				if !slices.ContainsFunc(res.SpendGaps, func(g supervise.SpendGap) bool {
					return g.ID == w.ID && g.Kind == supervise.GapUnreported && slices.Contains(g.Channels, "tokens")
				}) {
					t.Errorf("spend gaps %+v: no unreported-tokens gap for %s", res.SpendGaps, w.ID)
				}
			})
		}
	}
}

// resetConn takes over w's connection and resets it (RST, not FIN): the
// network cutting a stream mid-answer.
func resetConn(t *testing.T, w http.ResponseWriter) {
	t.Helper()
	conn, buf, err := http.NewResponseController(w).Hijack()
	if err != nil {
		t.Errorf("hijack: %v", err)
		return
	}
	buf.Flush()
	if tc, ok := conn.(*net.TCPConn); ok {
		tc.SetLinger(0)
	}
	conn.Close()
}
