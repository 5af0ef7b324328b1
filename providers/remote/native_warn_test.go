package remote_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/agentrt/agentrt/contract"
)

// An older server that does not serve a turn's native session answers
// every turn 404. The client says so once per provider — one warning,
// naming the environment and that the native session stays unknown —
// not once per turn; later turns on it log at debug level only. Every
// turn still completes, and none yields a made-up observation.
func TestOlderServerNativeSessionWarnsOncePerProvider(t *testing.T) {
	base, _ := serveScripted(t) // builds agentrt first: the deadline is the test's own
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	notFound := func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusNotFound)
		_, _ = w.Write([]byte(`{"error":{"code":"not_found","message":"no such route"}}`))
	}
	log := &logBuffer{}
	p := client(t, front(t, base, notFound), log, 2*time.Second)
	const turns = 3
	for _, env := range []contract.Environment{create(t, ctx, p), create(t, ctx, p)} {
		for range turns {
			events := turnEvents(t, ctx, env, "hi", true)
			term := terminalAt(events)
			if term < 0 {
				t.Fatalf("a turn has no terminal event: %+v", events)
			}
			if kind, _ := contract.EnvironmentEventTerminal(events[term]); kind != contract.TerminalCompleted {
				t.Errorf("a turn ended %s, want completed", kind)
			}
			for _, e := range events {
				if contract.IsPrivateEnvironmentEvent(e) {
					t.Errorf("an observation was yielded from a 404: %+v", e)
				}
			}
		}
	}
	got := log.String()
	if n := strings.Count(got, `"level":"WARN"`); n != 1 {
		t.Errorf("%d warnings over %d turns; want one per provider:\n%s", n, 2*turns, got)
	}
	if !strings.Contains(got, "404") || !strings.Contains(got, "unknown") {
		t.Errorf("the warning does not say the server answered 404 and the native session stays unknown:\n%s", got)
	}
	if n := strings.Count(got, `"level":"DEBUG"`); n != 2*turns-1 {
		t.Errorf("%d debug lines; want one for each later turn (%d):\n%s", n, 2*turns-1, got)
	}

	// Another provider client warns again, once.
	other := &logBuffer{}
	turnEvents(t, ctx, create(t, ctx, client(t, front(t, base, notFound), other, 2*time.Second)), "hi", true)
	if n := strings.Count(other.String(), `"level":"WARN"`); n != 1 {
		t.Errorf("another provider warned %d times; want once:\n%s", n, other.String())
	}
}
