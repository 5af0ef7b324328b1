package chatturn_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentrt/agentrt/chatturn"
)

// FD-02, behaviours 27–31: a durable turn is attached to only by its own
// tenant, user and session. Two identities can derive one execution id
// ("p", session "a:1" and project "p:a", session "1"), and another
// tenant may reuse a project and session id: such a request is refused
// 409 without a word of the recorded turn — never handed its lines —
// and nothing is produced for it.
func TestAnotherIdentityCannotAttachToARecordedTurn(t *testing.T) {
	rec := &recorder{}
	owner := chatturn.Identity{ProjectID: "p", TenantID: "t1", SessionID: "a:1", UserID: "u1", TurnIndex: 0}
	tests := []struct {
		name string
		id   chatturn.Identity
	}{
		{"another tenant", chatturn.Identity{ProjectID: "p", TenantID: "t2", SessionID: "a:1", UserID: "u1", TurnIndex: 0}},
		{"another user", chatturn.Identity{ProjectID: "p", TenantID: "t1", SessionID: "a:1", UserID: "u2", TurnIndex: 0}},
		{"another session deriving the same id", chatturn.Identity{ProjectID: "p:a", TenantID: "t1", SessionID: "1", UserID: "u1", TurnIndex: 0}},
	}
	var who chatturn.Identity
	h := &chatturn.Handler{Store: openStore(t, filepath.Join(t.TempDir(), "turns.db")), Turn: func(*http.Request) (*chatturn.Turn, error) {
		return &chatturn.Turn{Identity: who, Hooks: chatturn.Hooks{Produce: rec.producer("the owner's secret plan"), PersistAssistantMessage: rec.persist}}, nil
	}}
	srv := httptest.NewServer(h)
	defer srv.Close()

	who = owner
	lines, resp := post(t, srv.URL, nil)
	if resp.StatusCode != http.StatusOK || len(lines) == 0 {
		t.Fatalf("the owner's turn: status %d, %d lines", resp.StatusCode, len(lines))
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.id.ExecutionID() != owner.ExecutionID() {
				t.Fatalf("the case derives %q, not the owner's %q", tt.id.ExecutionID(), owner.ExecutionID())
			}
			who = tt.id
			req, err := http.NewRequest(http.MethodPost, srv.URL, nil)
			if err != nil {
				t.Fatal(err)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusConflict || strings.Contains(string(body), "secret") || strings.Contains(string(body), "t1") || strings.Contains(string(body), "u1") {
				t.Errorf("status %d, body %q; want 409 naming nothing of the recorded turn", resp.StatusCode, body)
			}
		})
	}
	if n := rec.produced.Load(); n != 1 {
		t.Errorf("produced %d times; want only the owner's turn", n)
	}
	// The owner still re-attaches.
	who = owner
	if again, resp := post(t, srv.URL, nil); resp.StatusCode != http.StatusOK || len(again) != len(lines) {
		t.Errorf("the owner's retry: status %d, %d lines; want its %d lines", resp.StatusCode, len(again), len(lines))
	}
}
