package remote

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	"github.com/agentrt/agentrt/contract/wire"
)

// A turn id is escaped in every turn route, as the environment id is:
// an id holding "/" or "?" names its turn, never another route or a
// query (the cancel route built it unescaped).
func TestTurnRoutesEscapeTheTurnID(t *testing.T) {
	var got atomic.Value
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got.Store(r.URL.EscapedPath() + "?" + r.URL.RawQuery)
		w.Header().Set("Content-Type", wire.ContentTypeJSON)
		w.WriteHeader(http.StatusNotFound)
		_, _ = w.Write([]byte(`{"error":{"code":"not_found","message":"no such turn"}}`))
	}))
	defer srv.Close()
	p, err := New(Options{BaseURL: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	_, _ = p.CancelTurn(context.Background(), "env/1", "turn/a?b=c", "op-1")
	if want := wire.PathEnvironments + "/env%2F1/turns/turn%2Fa%3Fb=c/cancel?"; got.Load() != want {
		t.Errorf("cancel requested %v, want %s", got.Load(), want)
	}
	if got, want := turnPath("e", "t/1")+"/native-session", wire.PathEnvironments+"/e/turns/t%2F1/native-session"; got != want {
		t.Errorf("native-session path %s, want %s", got, want)
	}
}
