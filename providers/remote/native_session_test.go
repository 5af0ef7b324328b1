package remote_test

import (
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/agentrt/agentrt/contract"
	"github.com/agentrt/agentrt/internal/servetest"
	"github.com/agentrt/agentrt/profile"
	"github.com/agentrt/agentrt/providers/remote"
)

// This package is layer 2: it cannot import the sidecar, so its tests
// run the real server as a child process, the built `agentrt serve`
// (internal/servetest).

const (
	serveToken = "remote-native-session-token"
	// serveScript: "slow" ends after a pause; "fails" ends with an
	// in-band failure, "stops" without a terminal event, "dies" with a
	// broken stream (the server's error frame); anything else says
	// hello.
	serveScript = `{"turns":[
 {"match":"slow","repeat":true,"steps":[{"text":"one"},{"delayMs":300},{"text":"two"}]},
 {"match":"fails","repeat":true,"steps":[{"text":"part"}],"end":"failed","error":"the model gave up"},
 {"match":"stops","repeat":true,"steps":[{"text":"part"}],"end":"no-terminal"},
 {"match":"dies","repeat":true,"steps":[{"text":"part"}],"end":"die","error":"the harness crashed"},
 {"repeat":true,"steps":[{"text":"Hello."}]}]}`
)

// logBuffer is a log sink safe for concurrent writers.
type logBuffer = servetest.Log

// serveScripted runs `agentrt serve --provider scripted` on a free
// loopback port, interrupted when the test ends, and returns its address
// and its log.
func serveScripted(t *testing.T) (string, *logBuffer) {
	t.Helper()
	script := filepath.Join(t.TempDir(), "script.json")
	if err := os.WriteFile(script, []byte(serveScript), 0o600); err != nil {
		t.Fatal(err)
	}
	return servetest.Serve(t, []string{"AGENTRT_SERVE_TOKEN=" + serveToken}, "--provider", "scripted", "--script", script)
}

// front puts a proxy in front of the server at target that answers the
// native-session route with intercept (nil relays it).
func front(t *testing.T, target string, intercept http.HandlerFunc) string {
	t.Helper()
	u, err := url.Parse(target)
	if err != nil {
		t.Fatal(err)
	}
	rp := httputil.NewSingleHostReverseProxy(u)
	rp.FlushInterval = -1
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if intercept != nil && strings.HasSuffix(r.URL.Path, "/native-session") {
			intercept(w, r)
			return
		}
		rp.ServeHTTP(w, r)
	}))
	t.Cleanup(ts.Close)
	return ts.URL
}

// client is a remote provider of base whose warnings go to log.
func client(t *testing.T, base string, log *logBuffer, callTimeout time.Duration) *remote.Provider {
	t.Helper()
	p, err := remote.New(remote.Options{BaseURL: base, Token: serveToken, RetryBackoff: 10 * time.Millisecond, MaxRetries: 2,
		CallTimeout: callTimeout, Logger: slog.New(slog.NewJSONHandler(log, &slog.HandlerOptions{Level: slog.LevelDebug}))})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// turnEvents reads one whole turn of env; owned reads its owner's
// stream. It fails the test on a stream error.
func turnEvents(t *testing.T, ctx context.Context, env contract.Environment, prompt string, owned bool) []contract.EnvironmentEvent {
	t.Helper()
	events := env.Stream
	if owned {
		o, ok := env.(contract.OwnedStreamer)
		if !ok {
			t.Fatalf("the remote environment %T is no contract.OwnedStreamer", env)
		}
		events = o.StreamOwned
	}
	var out []contract.EnvironmentEvent
	for ev, err := range events(ctx, &contract.TurnInput{Prompt: &prompt}) {
		if err != nil {
			t.Fatalf("turn %q: %v", prompt, err)
		}
		out = append(out, ev)
	}
	return out
}

func create(t *testing.T, ctx context.Context, p *remote.Provider) contract.Environment {
	t.Helper()
	env, err := p.Create(ctx, &contract.CreateInput{Profile: profile.Ref{Inline: &profile.Profile{Name: profile.Ptr("t")}}})
	if err != nil {
		t.Fatal(err)
	}
	return env
}

// terminalAt is the index of the first terminal event, or -1.
func terminalAt(events []contract.EnvironmentEvent) int {
	for i, e := range events {
		if _, ok := contract.EnvironmentEventTerminal(e); ok {
			return i
		}
	}
	return -1
}

// NSO-01/NSO-02 through a real `agentrt serve`: the owner's stream
// yields the private observation of the served provider's native
// session — its session of the environment's turn — once, right before
// the terminal event, including for a turn that ran on past a pause;
// the public stream of the same environment never yields it (NSO-03).
func TestStreamOwnedYieldsTheServedNativeSessionNSO01(t *testing.T) {
	base, serverLog := serveScripted(t) // builds agentrt first: the deadline is the test's own
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	log := &logBuffer{}
	env := create(t, ctx, client(t, base, log, 0))
	for n, prompt := range []string{"hi", "slow"} {
		events := turnEvents(t, ctx, env, prompt, true)
		term := terminalAt(events)
		if term < 1 {
			t.Fatalf("turn %q: no terminal event after the observation in %d events", prompt, len(events))
		}
		var private []int
		for i, e := range events {
			if contract.IsPrivateEnvironmentEvent(e) {
				private = append(private, i)
			}
		}
		if d := cmp.Diff([]int{term - 1}, private); d != "" {
			t.Fatalf("turn %q: private events at (-want +got):\n%s", prompt, d)
		}
		want := &contract.NativeSessionObserved{Provider: "scripted", NativeSessionID: env.ID() + "-session-" + string(rune('1'+n))}
		if d := cmp.Diff(want, contract.ObservedNativeSession(events[term-1])); d != "" {
			t.Errorf("turn %q: observation (-want +got):\n%s", prompt, d)
		}
		if strings.Contains(serverLog.String(), want.NativeSessionID) || strings.Contains(log.String(), want.NativeSessionID) {
			t.Errorf("turn %q: a log names the native session", prompt)
		}
	}
	for _, e := range turnEvents(t, ctx, env, "hi", false) {
		if contract.IsPrivateEnvironmentEvent(e) {
			t.Errorf("the public stream yielded the private observation %+v", e)
		}
	}
	if log.String() != "" {
		t.Errorf("the client warned on turns that went well:\n%s", log.String())
	}
}

// Bounded and truthful: when the native session cannot be read — the
// server fails, answers what no decoder accepts, names another turn,
// does not know the route (an older server), or never answers — the
// turn itself still completes, no observation is yielded (the run's
// native session stays unknown, never made up), the read ends within
// CallTimeout, and a warning says so without the id.
func TestStreamOwnedLeavesTheNativeSessionUnknownWhenUnreadable(t *testing.T) {
	base, _ := serveScripted(t) // builds agentrt first: the deadline is the test's own
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	jsonAnswer := func(status int, body string) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(status)
			_, _ = w.Write([]byte(body))
		}
	}
	const callTimeout = 2 * time.Second
	for name, h := range map[string]http.HandlerFunc{
		"server error":   jsonAnswer(http.StatusInternalServerError, `{"error":{"code":"internal","message":"boom"}}`),
		"not found":      jsonAnswer(http.StatusNotFound, `{"error":{"code":"not_found","message":"no such route"}}`),
		"not ended":      jsonAnswer(http.StatusConflict, `{"error":{"code":"turn_not_ended","message":"live"}}`),
		"malformed":      jsonAnswer(http.StatusOK, `{"turnId":"x","observation":{"provider":"scripted","nativeSessionId":" leaked-id"}}`),
		"another turn":   jsonAnswer(http.StatusOK, `{"turnId":"someone-else","observation":{"provider":"scripted","nativeSessionId":"leaked-id"}}`),
		"unknown member": jsonAnswer(http.StatusOK, `{"turnId":"x","nativeSessionId":"leaked-id"}`),
		"silent": func(w http.ResponseWriter, r *http.Request) {
			<-r.Context().Done() // never answers; the client gives up
		},
	} {
		t.Run(name, func(t *testing.T) {
			log := &logBuffer{}
			env := create(t, ctx, client(t, front(t, base, h), log, callTimeout))
			start := time.Now()
			events := turnEvents(t, ctx, env, "hi", true)
			if took := time.Since(start); took > time.Minute {
				t.Errorf("the turn took %v: the read was not bounded by CallTimeout %v", took, callTimeout)
			}
			term := terminalAt(events)
			if term < 0 {
				t.Fatalf("the turn has no terminal event: %+v", events)
			}
			if kind, _ := contract.EnvironmentEventTerminal(events[term]); kind != contract.TerminalCompleted {
				t.Errorf("the turn ended %s, want completed: an unreadable native session is not the turn's failure", kind)
			}
			for _, e := range events {
				if contract.IsPrivateEnvironmentEvent(e) {
					t.Errorf("an observation was yielded from an unreadable answer: %+v", e)
				}
			}
			got := log.String()
			if !strings.Contains(got, `"level":"WARN"`) || !strings.Contains(got, "unknown") || !strings.Contains(got, env.ID()) {
				t.Errorf("no warning naming the environment and the unknown native session:\n%s", got)
			}
			if strings.Contains(got, "leaked-id") || strings.Contains(got, env.ID()+"-session") {
				t.Errorf("the warning names a native session id:\n%s", got)
			}
		})
	}
}

// A turn that ends early still binds what it observed (NSO-02): one that
// fails in band yields the observation before its failed terminal, one
// that stops without a terminal yields it at the end, and one the
// server ends with an error frame yields it before that error — once
// each, and never a second time.
func TestStreamOwnedObservesATurnThatEndsEarlyNSO02(t *testing.T) {
	base, _ := serveScripted(t) // builds agentrt first: the deadline is the test's own
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	log := &logBuffer{}
	env := create(t, ctx, client(t, base, log, 0))
	for n, tc := range []struct {
		prompt string
		// at is where the observation comes: "terminal" (just before
		// the terminal event), "last" (the last event) or "error" (just
		// before the stream's error).
		at string
	}{{"fails", "terminal"}, {"stops", "last"}, {"dies", "error"}} {
		var events []contract.EnvironmentEvent
		var streamErr error
		prompt := tc.prompt
		for ev, err := range env.(contract.OwnedStreamer).StreamOwned(ctx, &contract.TurnInput{Prompt: &prompt}) {
			if err != nil {
				streamErr = err
				break
			}
			events = append(events, ev)
		}
		want := &contract.NativeSessionObserved{Provider: "scripted", NativeSessionID: env.ID() + "-session-" + string(rune('1'+n))}
		var private []int
		for i, e := range events {
			if contract.IsPrivateEnvironmentEvent(e) {
				private = append(private, i)
				if d := cmp.Diff(want, contract.ObservedNativeSession(e)); d != "" {
					t.Errorf("turn %q: observation (-want +got):\n%s", prompt, d)
				}
			}
		}
		at := len(events) - 1
		switch tc.at {
		case "terminal":
			at = terminalAt(events) - 1
			if k, _ := contract.EnvironmentEventTerminal(events[at+1]); k != contract.TerminalFailed || streamErr != nil {
				t.Errorf("turn %q: ended %s (%v), want failed in band", prompt, k, streamErr)
			}
		case "last", "error":
			if terminalAt(events) >= 0 {
				t.Errorf("turn %q: a terminal event came", prompt)
			}
			if (tc.at == "error") != (streamErr != nil) {
				t.Errorf("turn %q: stream error %v", prompt, streamErr)
			}
		}
		if d := cmp.Diff([]int{at}, private); d != "" {
			t.Errorf("turn %q: private events at (-want +got):\n%s", prompt, d)
		}
	}
	if log.String() != "" {
		t.Errorf("the client warned:\n%s", log.String())
	}
}
