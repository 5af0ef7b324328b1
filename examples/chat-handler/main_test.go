package main

import (
	"bufio"
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentrt/agentrt/chatturn"
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
