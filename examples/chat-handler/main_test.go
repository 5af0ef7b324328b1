package main

import (
	"bufio"
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/chatturn"
	"github.com/agentrt/agentrt/kernel"
	"github.com/agentrt/agentrt/store"
	"github.com/agentrt/agentrt/store/sqlite"
)

// FD-02: a client drops its connection after two lines and re-attaches
// with the execution id and Last-Event-ID it had; it gets the rest of the
// same turn, and the assistant's text is persisted once, in full.
func TestDropAndReattach(t *testing.T) {
	ctx := context.Background()
	st, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "runs.db"), sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	msgs := &messages{}
	h, err := newHandler(st, msgs, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	defer srv.Close()
	url := srv.URL + "/?session=demo&turn=0"

	dropCtx, drop := context.WithCancel(ctx)
	req, _ := http.NewRequestWithContext(dropCtx, http.MethodPost, url, nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	execID := resp.Header.Get(chatturn.HeaderExecutionID)
	var got []string
	sc := bufio.NewScanner(resp.Body)
	for len(got) < 2 && sc.Scan() {
		got = append(got, sc.Text())
	}
	drop()
	resp.Body.Close()

	req, _ = http.NewRequest(http.MethodPost, url, nil)
	req.Header.Set(chatturn.HeaderExecutionID, execID)
	req.Header.Set("Last-Event-ID", "2")
	resp, err = http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	for sc = bufio.NewScanner(resp.Body); sc.Scan(); {
		got = append(got, sc.Text())
	}
	var types, text []string
	for _, l := range got {
		var line struct {
			Type string `json:"type"`
			Data struct {
				Delta string `json:"delta"`
			} `json:"data"`
		}
		if err := json.Unmarshal([]byte(l), &line); err != nil {
			t.Fatalf("line %q: %v", l, err)
		}
		types = append(types, line.Type)
		text = append(text, line.Data.Delta)
	}
	if want := "session.run.started text text text session.run.completed"; strings.Join(types, " ") != want {
		t.Fatalf("lines %v; want %s", types, want)
	}
	if err := h.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	if final, ok := msgs.get(execID); !ok || final != "Restores are one click now." || strings.Join(text, "") != final {
		t.Errorf("persisted %q (%v), streamed %q", final, ok, strings.Join(text, ""))
	}
}

// FD-02, spec/runtime.md §3.3: the process that served turn 1 died
// mid-turn — its record is left running under a lease that lapsed, with
// the start line and one delta recorded. A client's retry under the same
// execution id lands on that execution: a second attempt answers again
// (the model ran in the dead process), the client is told to drop what
// it had (session.run.restarted) and gets the whole answer, persisted
// once.
func TestRetryAfterTheServingProcessDied(t *testing.T) {
	ctx := context.Background()
	st, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "runs.db"), sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	execID := chatturn.DeriveExecutionID("demo", "demo", 1)
	doc, err := canonjson.ToValue(kernel.RuntimeRecord{ID: execID, WorkspaceID: "acme", SessionID: "demo", TaskID: chatturn.KindChatTurn,
		Status: store.StatusRunning, StartedAt: time.Now().UTC().Format(time.RFC3339Nano)})
	if err != nil {
		t.Fatal(err)
	}
	dead, err := st.CreateRun(ctx, store.Run{ID: execID, Kind: kernel.KindRuntime, Status: store.StatusRunning, Owner: "dead/1",
		LeaseUntil: time.Now().Add(300 * time.Millisecond), Doc: doc})
	if err != nil {
		t.Fatal(err)
	}
	lines := []string{`{"type":"session.run.started","data":{"sessionId":"demo","tenantId":"acme","turnIndex":1}}`, `{"type":"text","data":{"delta":"Rest"}}`}
	for i, l := range lines {
		v, _ := canonjson.Decode([]byte(l))
		if _, err := st.AppendEvents(ctx, dead.Fence(), []store.NewEvent{{ID: strconv.Itoa(i + 1), Type: "line", Time: time.Now(), Body: v}}); err != nil {
			t.Fatal(err)
		}
	}
	time.Sleep(400 * time.Millisecond) // the dead process's lease lapses

	msgs := &messages{}
	h, err := newHandler(st, msgs, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	defer srv.Close()
	req, _ := http.NewRequest(http.MethodPost, srv.URL+"/?session=demo&turn=1", nil)
	req.Header.Set(chatturn.HeaderExecutionID, execID)
	req.Header.Set("Last-Event-ID", "2")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var types []string
	var text strings.Builder
	for sc := bufio.NewScanner(resp.Body); sc.Scan(); {
		var line struct {
			Type string `json:"type"`
			Data struct {
				Delta string `json:"delta"`
			} `json:"data"`
		}
		if err := json.Unmarshal(sc.Bytes(), &line); err != nil {
			t.Fatal(err)
		}
		types = append(types, line.Type)
		text.WriteString(line.Data.Delta)
	}
	if want := "session.run.restarted text text text session.run.completed"; strings.Join(types, " ") != want {
		t.Fatalf("lines %v; want %s", types, want)
	}
	if err := h.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	if final, ok := msgs.get(execID); !ok || final != "Restores are one click now." || text.String() != final {
		t.Errorf("persisted %q (%v), streamed %q", final, ok, text.String())
	}
}
