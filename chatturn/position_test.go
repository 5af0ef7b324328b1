package chatturn_test

import (
	"bufio"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/agentrt/agentrt/chatturn"
	"github.com/agentrt/agentrt/internal/storetest"
	"github.com/agentrt/agentrt/store"
)

// A re-attach whose Last-Event-ID is past the last line recorded for the
// execution — ended or live — names a line no reader received: it is
// refused 410 saying so (as the sidecar refuses a resume past a turn's
// head), never answered an empty 200; a Last-Event-ID naming a turn with
// no record is refused 410 too and runs nothing. A Last-Event-ID of the
// last line gets the empty rest (FD-02; spec/runtime.md §3.3).
func TestReattachPastTheLastLineIsGone(t *testing.T) {
	storetest.Each(t, func(t *testing.T, open func(t *testing.T) store.Store) {
		rec := &recorder{}
		gate := make(chan struct{})
		defer close(gate)
		h := &chatturn.Handler{Store: open(t), PollInterval: 20 * time.Millisecond, Turn: func(r *http.Request) (*chatturn.Turn, error) {
			if r.URL.Query().Get("session") == "live" {
				return turnFor(rec, gatedProducer(rec, 3, gate, 0))(r)
			}
			return turnFor(rec, rec.producer("a", "b"))(r)
		}}
		srv := httptest.NewServer(h)
		defer srv.Close()
		lines, resp := post(t, srv.URL, nil)
		if resp.StatusCode != http.StatusOK || len(lines) != 4 {
			t.Fatalf("the turn: status %d, lines %v", resp.StatusCode, types(lines))
		}
		exec := ident.ExecutionID()
		gone := func(t *testing.T, url string, hdr http.Header, want string) {
			t.Helper()
			req, _ := http.NewRequest(http.MethodPost, url, nil)
			for k, v := range hdr {
				req.Header[k] = v
			}
			resp, err := (&http.Client{Timeout: 30 * time.Second}).Do(req)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusGone || !strings.Contains(string(body), want) {
				t.Errorf("status %d, body %q; want 410 saying %q", resp.StatusCode, body, want)
			}
		}
		gone(t, srv.URL, http.Header{chatturn.HeaderExecutionID: {exec}, "Last-Event-Id": {"5"}}, "past the last line (4)")
		gone(t, srv.URL, http.Header{"Last-Event-Id": {"400"}}, "past the last line (4)")
		if rest, resp := post(t, srv.URL, http.Header{chatturn.HeaderExecutionID: {exec}, "Last-Event-Id": {"4"}}); resp.StatusCode != http.StatusOK || len(rest) != 0 {
			t.Errorf("after the last line: status %d, lines %v; want 200 and nothing", resp.StatusCode, types(rest))
		}
		// A turn with no record: nothing is started for it.
		gone(t, srv.URL+"?session=unknown", http.Header{"Last-Event-Id": {"2"}}, "no record")
		// A live turn: past what it recorded so far.
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, srv.URL+"?session=live", nil)
		live, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer live.Body.Close()
		sc := bufio.NewScanner(live.Body)
		for range 2 { // started, d1; d2 waits for the gate
			if !sc.Scan() {
				t.Fatal("the live turn ended early")
			}
		}
		gone(t, srv.URL+"?session=live", http.Header{"Last-Event-Id": {"3"}}, "past the last line (2)")
		if n := rec.produced.Load(); n != 2 {
			t.Errorf("produced %d turns; want 2 (the refused re-attaches start none)", n)
		}
	})
}
