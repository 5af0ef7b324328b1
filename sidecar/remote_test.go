package sidecar_test

import (
	"context"
	"errors"
	"io/fs"
	"iter"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentrt/agentrt/contract"
	"github.com/agentrt/agentrt/contract/wire"
	"github.com/agentrt/agentrt/profile"
	"github.com/agentrt/agentrt/providers/remote"
	"github.com/agentrt/agentrt/providers/scripted"
	"github.com/agentrt/agentrt/sidecar"
)

// faulty wraps h: the first matching request runs to its end on the
// server, then its connection is cut before the client reads the answer
// (create), or after the first event (a turn stream).
func faulty(h http.Handler, match func(*http.Request) bool, afterWrites int) (http.Handler, *atomic.Int32) {
	var hits atomic.Int32
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !match(r) || hits.Add(1) != 1 {
			h.ServeHTTP(w, r)
			return
		}
		if afterWrites == 0 {
			h.ServeHTTP(httptest.NewRecorder(), r) // the effect happens, the answer is lost
			panic(http.ErrAbortHandler)
		}
		h.ServeHTTP(&cutWriter{ResponseWriter: w, left: afterWrites}, r)
	}), &hits
}

// cutWriter aborts the connection once it wrote left frames.
type cutWriter struct {
	http.ResponseWriter
	left int
}

func (c *cutWriter) Write(b []byte) (int, error) {
	if strings.HasPrefix(string(b), "id: ") {
		if c.left == 0 {
			panic(http.ErrAbortHandler)
		}
		c.left--
	}
	return c.ResponseWriter.Write(b)
}

func (c *cutWriter) Flush() { c.ResponseWriter.(http.Flusher).Flush() }

func newRemote(t *testing.T, url string) *remote.Provider {
	t.Helper()
	p, err := remote.New(remote.Options{BaseURL: url, Token: testToken, RetryBackoff: 10 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// faultyRemote serves p through a sidecar whose first request matching
// match is cut as faulty cuts it, and returns a remote client of it and
// the count of matching requests. The server closes with the test.
func faultyRemote(t *testing.T, p contract.Provider, match func(*http.Request) bool, afterWrites int) (*remote.Provider, *atomic.Int32) {
	t.Helper()
	s, err := sidecar.New(p, sidecar.Options{Token: testToken})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	h, hits := faulty(s, match, afterWrites)
	ts := httptest.NewServer(h)
	t.Cleanup(ts.Close)
	return newRemote(t, ts.URL), hits
}

// pathEnds matches a request whose path ends in suffix.
func pathEnds(suffix string) func(*http.Request) bool {
	return func(r *http.Request) bool { return strings.HasSuffix(r.URL.Path, suffix) }
}

func createInput(key string) *contract.CreateInput {
	in := &contract.CreateInput{Profile: profile.Ref{Inline: &profile.Profile{Name: profile.Ptr("t")}}}
	if key != "" {
		in.IdempotencyKey = &key
	}
	return in
}

// ENV-10: a create whose answer is lost after the server made the
// environment is retried with the same key: one environment, same id.
func TestRemoteAmbiguousCreateRetriesSameKey(t *testing.T) {
	for _, key := range []string{"caller-key", ""} {
		p := newScripted(t)
		rp, hits := faultyRemote(t, p, func(r *http.Request) bool { return r.Method == http.MethodPost && r.URL.Path == "/v1/environments" }, 0)
		env, err := rp.Create(context.Background(), createInput(key))
		if err != nil {
			t.Fatalf("key %q: Create: %v", key, err)
		}
		if hits.Load() != 2 || p.Creates() != 1 {
			t.Errorf("key %q: %d create requests, %d environments; want 2 requests and 1 environment", key, hits.Load(), p.Creates())
		}
		want := contract.Creation("") // a caller's key may have been used before
		if key == "" {
			want = contract.CreationCreated
		}
		if env.Creation() != want {
			t.Errorf("key %q: creation %q, want %q", key, env.Creation(), want)
		}
		if st, err := env.Status(context.Background()); err != nil || st != contract.EnvironmentRunning {
			t.Errorf("key %q: status %q, %v", key, st, err)
		}
	}
}

// A turn stream cut after its first event reconnects with Last-Event-ID:
// every event arrives once, in order, and the turn ran once.
func TestRemoteStreamReconnects(t *testing.T) {
	p := newScripted(t)
	rp, hits := faultyRemote(t, p, pathEnds("/turns"), 1)
	env, err := rp.Create(context.Background(), createInput(""))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var texts []string
	prompt := "slow"
	for ev, err := range env.Stream(ctx, &contract.TurnInput{Prompt: &prompt}) {
		if err != nil {
			t.Fatalf("stream: %v", err)
		}
		if n := ev.Normalized; n != nil && n.MessagePartUpdated != nil && n.MessagePartUpdated.Delta != nil {
			texts = append(texts, *n.MessagePartUpdated.Delta)
		}
	}
	if hits.Load() < 2 {
		t.Fatalf("the stream was opened %d times; the cut did not happen", hits.Load())
	}
	if got := strings.Join(texts, "|"); got != "one|two|three" {
		t.Fatalf("texts %q, want one|two|three exactly once each", got)
	}
	if n := p.Turns(); n != 1 {
		t.Fatalf("the provider ran %d turns, want 1", n)
	}
}

// deltas are the text deltas of events, in order.
func deltas(events []contract.EnvironmentEvent) string {
	var texts []string
	for _, ev := range events {
		if n := ev.Normalized; n != nil && n.MessagePartUpdated != nil && n.MessagePartUpdated.Delta != nil {
			texts = append(texts, *n.MessagePartUpdated.Delta)
		}
	}
	return strings.Join(texts, "|")
}

// A session's event stream cut mid-run is resumed after the last event
// received's id (Last-Event-ID): every event arrives once, in order,
// and the result is waited for across several pending answers.
func TestRemoteSessionEventsReconnect(t *testing.T) {
	p := newScripted(t)
	s, err := sidecar.New(p, sidecar.Options{Token: testToken})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var resumedAfter atomic.Value
	h, hits := faulty(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if id := r.Header.Get("Last-Event-ID"); id != "" {
			resumedAfter.Store(id)
		}
		s.ServeHTTP(w, r)
	}), func(r *http.Request) bool { return strings.HasSuffix(r.URL.Path, "/events") }, 3)
	ts := httptest.NewServer(h)
	defer ts.Close()
	rp, err := remote.New(remote.Options{BaseURL: ts.URL, Token: testToken, RetryBackoff: 10 * time.Millisecond, CallTimeout: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	env, err := rp.Create(context.Background(), createInput(""))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	ref, err := env.(contract.Dispatcher).Dispatch(ctx, &contract.TurnInput{Prompt: ptr("slow"), Detach: ptr(true)})
	if err != nil {
		t.Fatal(err)
	}
	sess, err := env.(contract.SessionOpener).Session(ctx, ref.ID, ref.ControlRef)
	if err != nil {
		t.Fatal(err)
	}
	var events []contract.EnvironmentEvent
	for ev, err := range sess.Events(ctx, "", "") {
		if err != nil {
			t.Fatalf("events: %v", err)
		}
		events = append(events, ev)
	}
	if hits.Load() < 2 {
		t.Fatalf("the stream was opened %d times; the cut did not happen", hits.Load())
	}
	if got := deltas(events); got != "one|two|three" {
		t.Fatalf("texts %q, want one|two|three exactly once each", got)
	}
	got, _ := resumedAfter.Load().(string)
	if !slices.ContainsFunc(events[:len(events)-1], func(e contract.EnvironmentEvent) bool { return e.ID != nil && *e.ID == got }) {
		t.Errorf("resumed after %q, want the id of an event received before the cut", got)
	}
	// The run takes ~300ms; each result call waits CallTimeout/2.
	res, err := sess.Result(ctx)
	if err != nil || !res.Success || res.Text != "onetwothree" {
		t.Fatalf("result %+v, %v", res, err)
	}
	if n := p.Turns(); n != 1 {
		t.Fatalf("the provider ran %d turns, want 1", n)
	}
}

// A session opened without a reference binds to the latest run; a prompt
// rebinds it to the new run; a reference naming another run is refused
// before any call reaches a run.
func TestRemoteSessionBinding(t *testing.T) {
	ts, _ := serve(t, newScripted(t), sidecar.Options{})
	rp := newRemote(t, ts.URL)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	env, err := rp.Create(ctx, createInput(""))
	if err != nil {
		t.Fatal(err)
	}
	ref, err := env.(contract.Dispatcher).Dispatch(ctx, &contract.TurnInput{Prompt: ptr("hi"), SessionID: ptr("s1")})
	if err != nil {
		t.Fatal(err)
	}
	opener := env.(contract.SessionOpener)
	sess, err := opener.Session(ctx, "s1", nil)
	if err != nil {
		t.Fatal(err)
	}
	if sess.ControlRef() == nil || !contract.SameRunControlRef(*sess.ControlRef(), *ref.ControlRef) {
		t.Fatalf("a session opened without a reference is bound to %+v, want the dispatched run", sess.ControlRef())
	}
	if _, err := sess.Result(ctx); err != nil {
		t.Fatal(err)
	}
	res, err := sess.Prompt(ctx, &contract.TurnInput{Prompt: ptr("again")})
	if err != nil || !res.Success {
		t.Fatalf("prompt: %+v, %v", res, err)
	}
	if sess.ControlRef().RunID == ref.ControlRef.RunID {
		t.Error("the prompt did not rebind the session to its run")
	}
	if st, ok, err := sess.Status(ctx); err != nil || !ok || st != contract.SessionCompleted {
		t.Errorf("status %q %v %v", st, ok, err)
	}
	other := *ref.ControlRef
	other.RunID += "-other"
	if _, err := opener.Session(ctx, "s1", &other); err == nil {
		t.Error("a reference naming another run opened the session")
	}
	// CTL-03: the run's own coordinates with another admission digest
	// (a changed input reusing the reference) are refused too.
	changed := *ref.ControlRef
	changed.RequestDigest = ptr("sha256:" + strings.Repeat("ab", 32))
	var we *wire.Error
	if _, err := opener.Session(ctx, "s1", &changed); !errors.As(err, &we) || we.Code != wire.CodeSessionRefused {
		t.Errorf("a reference with a changed admission digest: %v, want session_refused", err)
	}
	if _, ok := sess.(contract.RunCanceller); !ok {
		t.Error("the served provider declares retained control; the session offers no CancelRun")
	}
	if _, ok := sess.(contract.InteractionResponder); ok {
		t.Error("the served provider originates no interactions; the session offers an interaction responder")
	}
}

// A dispatch whose answer is lost after the server admitted the run is
// re-sent when the turn carries a turn id, and the provider's turn
// idempotency resolves it to the same run: one run, the same reference.
// Without a turn id the lost answer is reported, not re-sent.
func TestRemoteDispatchLostAnswer(t *testing.T) {
	for _, turnID := range []string{"turn-1", ""} {
		p := newScripted(t)
		rp, hits := faultyRemote(t, p, pathEnds("/dispatch"), 0)
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		env, err := rp.Create(ctx, createInput(""))
		if err != nil {
			t.Fatal(err)
		}
		in := &contract.TurnInput{Prompt: ptr("hi"), Detach: ptr(true)}
		if turnID != "" {
			in.TurnID = &turnID
		}
		ref, err := env.(contract.Dispatcher).Dispatch(ctx, in)
		switch {
		case turnID == "" && err == nil:
			t.Error("a dispatch without a turn id was re-sent after its answer was lost")
		case turnID != "" && err != nil:
			t.Errorf("a dispatch with a turn id: %v", err)
		case turnID != "":
			if hits.Load() != 2 {
				t.Errorf("the dispatch was sent %d times, want 2", hits.Load())
			}
			sess, err := env.(contract.SessionOpener).Session(ctx, ref.ID, ref.ControlRef)
			if err != nil {
				t.Fatal(err)
			}
			if res, err := sess.Result(ctx); err != nil || !res.Success {
				t.Errorf("the run: %+v, %v", res, err)
			}
			if p.Turns() != 1 {
				t.Errorf("the provider ran %d turns, want 1", p.Turns())
			}
		}
		cancel()
	}
}

// A read of a missing workspace file comes back as the contract's
// not-found (fs.ErrNotExist), typed (*wire.Error, file_not_found, 404),
// and is asked once: an absence is final, not a server fault to retry.
func TestRemoteReadMissingFileIsNotFound(t *testing.T) {
	_, s := serve(t, newScripted(t), sidecar.Options{})
	var reads atomic.Int32
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasSuffix(r.URL.Path, "/workspace/read") {
			reads.Add(1)
		}
		s.ServeHTTP(w, r)
	}))
	defer ts.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	env, err := newRemote(t, ts.URL).Create(ctx, createInput(""))
	if err != nil {
		t.Fatal(err)
	}
	_, err = env.(contract.WorkspaceReader).ReadFile(ctx, "missing.txt", "")
	var we *wire.Error
	if !errors.Is(err, fs.ErrNotExist) || !errors.As(err, &we) || we.Code != wire.CodeFileNotFound || we.Status != http.StatusNotFound {
		t.Fatalf("reading a missing file: %v, want a 404 file_not_found matching fs.ErrNotExist", err)
	}
	if n := reads.Load(); n != 1 {
		t.Errorf("the read was sent %d times, want once", n)
	}
}

// The contract sets no size limit on a profile (spec profile.md A.12:
// its JSON limits are not applied to profile fields), so a profile larger
// than the ordinary 1 MiB body is validated and created over the wire;
// the wire's own bound, wire.MaxProfileBodyBytes, is refused with 413.
func TestRemoteLargeProfileValidatesAndCreates(t *testing.T) {
	ts, _ := serve(t, newScripted(t), sidecar.Options{})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	exposed, err := newRemote(t, ts.URL).Exposed(ctx)
	if err != nil {
		t.Fatal(err)
	}
	large := profile.Ref{Inline: &profile.Profile{Name: profile.Ptr("large"),
		Prompt: &profile.Prompt{SystemPrompt: profile.Ptr(strings.Repeat("be exact. ", 300_000))}}} // 3 MB
	res, err := exposed.(contract.ProfileValidator).ValidateProfile(ctx, large)
	if err != nil || !res.OK {
		t.Fatalf("validating a 3 MB profile: %+v, %v", res, err)
	}
	env, err := exposed.Create(ctx, &contract.CreateInput{Profile: large})
	if err != nil {
		t.Fatalf("creating with a 3 MB profile: %v", err)
	}
	if st, err := env.Status(ctx); err != nil || st != contract.EnvironmentRunning {
		t.Errorf("status %q, %v", st, err)
	}
	over := `{"profile":{"name":"t","description":"` + strings.Repeat("x", wire.MaxProfileBodyBytes) + `"}}`
	status, body := do(t, ts, http.MethodPost, wire.PathProfileValidation, over, nil)
	wantError(t, status, body, http.StatusRequestEntityTooLarge, wire.CodeTooLarge, nil)
	huge := profile.Ref{Inline: &profile.Profile{Name: profile.Ptr("huge"), Description: profile.Ptr(strings.Repeat("x", wire.MaxProfileBodyBytes))}}
	if _, err := exposed.(contract.ProfileValidator).ValidateProfile(ctx, huge); err == nil || !strings.Contains(err.Error(), "larger than") {
		t.Errorf("a profile over the wire bound: %v, want a refusal before sending", err)
	}
}

// NAT-06, NAT-11 over the wire: a native continuation whose answer is lost after
// the provider admitted it is re-sent with the same operation id and
// answered replayed with the original run; the provider continued once.
func TestRemoteContinueNativeLostAnswer(t *testing.T) {
	p := newScripted(t)
	rp, hits := faultyRemote(t, p, pathEnds("/continue"), 0)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	env, err := rp.Create(ctx, createInput(""))
	if err != nil {
		t.Fatal(err)
	}
	ref, err := env.(contract.Dispatcher).Dispatch(ctx, &contract.TurnInput{Prompt: ptr("hi"), SessionID: ptr("native")})
	if err != nil {
		t.Fatal(err)
	}
	sess, err := env.(contract.SessionOpener).Session(ctx, ref.ID, ref.ControlRef)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := sess.Result(ctx); err != nil {
		t.Fatal(err)
	}
	nc, ok := sess.(contract.NativeContinuer)
	if !ok {
		t.Fatal("the served provider declares nativeContinuation; the session offers no NativeContinuer")
	}
	proof, err := nc.ContextBoundary(ctx)
	if err != nil {
		t.Fatal(err)
	}
	c := ref.ControlRef
	run := contract.ExactRunControlRef{RunID: c.RunID, Provider: c.Provider, EnvironmentID: c.EnvironmentID,
		SessionID: *c.SessionID, ExecutionID: *c.ExecutionID, RequestDigest: *c.RequestDigest}
	turn := contract.NativeContextContinuationTurn{Prompt: ptr("go on")}
	req, err := contract.NewNativeContextContinuationRequest("continue-1", turn, run, *proof)
	if err != nil {
		t.Fatal(err)
	}
	res, err := nc.ContinueNative(ctx, req, contract.NativeContinuationOptions{Turn: turn})
	if err != nil {
		t.Fatalf("ContinueNative: %v", err)
	}
	if hits.Load() != 2 {
		t.Errorf("the continuation was sent %d times, want 2 (the first answer lost)", hits.Load())
	}
	if res.Acknowledgement.Status != contract.ContinuationStatusReplayed || !res.Succeeded() || !contract.NativeContinuationResultMatchesRequest(req, res) {
		t.Errorf("the re-sent continuation answered %s, want replayed with the original run", res.Acknowledgement.Status)
	}
	if n := p.Counters().NativeContinuations; n != 1 {
		t.Errorf("the provider continued %d times, want once", n)
	}
}

// A legacy fork whose answer is lost after the provider forked is
// re-sent under the same operation id and answered with the recorded
// fork: one new environment, never two.
func TestRemoteForkLostAnswer(t *testing.T) {
	p := newScripted(t)
	rp, hits := faultyRemote(t, p, pathEnds("/forks"), 0)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	env, err := rp.Create(ctx, createInput(""))
	if err != nil {
		t.Fatal(err)
	}
	if err := env.(contract.WorkspaceWriter).WriteFile(ctx, "a.txt", "before\n", ""); err != nil {
		t.Fatal(err)
	}
	cp, err := env.(contract.LegacyCheckpointer).Checkpoint(ctx, &contract.CheckpointRequest{Name: ptr("cp")})
	if err != nil {
		t.Fatal(err)
	}
	fork, err := env.(contract.LegacyForker).Fork(ctx, cp, &contract.ForkRequest{Name: ptr("fork")})
	if err != nil {
		t.Fatalf("Fork: %v", err)
	}
	if hits.Load() != 2 {
		t.Errorf("the fork was sent %d times, want 2 (the first answer lost)", hits.Load())
	}
	all, err := p.List(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(all) != 2 {
		t.Errorf("%d environments after one create and one fork, want 2", len(all))
	}
	if got, err := fork.(contract.WorkspaceReader).ReadFile(ctx, "a.txt", ""); err != nil || got != "before\n" {
		t.Errorf("the fork reads %q, %v; want the checkpointed file", got, err)
	}
}

// The same operation id with another request is refused before any
// effect (409 idempotency_conflict), and an undeclared ability's route
// is refused unsupported (422).
func TestLegacyBranchingRoutes(t *testing.T) {
	ts, _ := serve(t, newScripted(t), sidecar.Options{})
	status, body := do(t, ts, http.MethodPost, wire.PathEnvironments, createBody, nil)
	base := "/v1/environments/" + createResult(t, status, body).Environment.ID
	status, body = do(t, ts, http.MethodPost, base+"/checkpoints", `{"operationId":"op-1","request":{"name":"a"}}`, nil)
	first, err := wire.ParseCheckpointRef(body)
	if status != http.StatusOK || err != nil {
		t.Fatalf("checkpoint: %d %s (%v)", status, body, err)
	}
	status, body = do(t, ts, http.MethodPost, base+"/checkpoints", `{"operationId":"op-1","request":{"name":"a"}}`, nil)
	if again, err := wire.ParseCheckpointRef(body); status != http.StatusOK || err != nil || again.ID != first.ID {
		t.Errorf("the re-sent checkpoint: %d %s (%v), want checkpoint %s again", status, body, err, first.ID)
	}
	status, body = do(t, ts, http.MethodPost, base+"/checkpoints", `{"operationId":"op-1","request":{"name":"b"}}`, nil)
	wantError(t, status, body, http.StatusConflict, wire.CodeIdempotencyConflict, nil)
	status, body = do(t, ts, http.MethodPost, base+"/checkpoints", `{"request":{"name":"b"}}`, nil)
	wantError(t, status, body, http.StatusBadRequest, wire.CodeInvalidRequest, ptr("/operationId"))
	status, body = do(t, ts, http.MethodPost, base+"/forks", `{"operationId":"f","from":{"id":7},"request":{}}`, nil)
	wantError(t, status, body, http.StatusBadRequest, wire.CodeInvalidRequest, ptr("/from/id"))

	ps, err := sidecar.New(plainProvider{newScripted(t)}, sidecar.Options{Token: testToken})
	if err != nil {
		t.Fatal(err)
	}
	plain := httptestServer(t, ps)
	status, body = do(t, plain, http.MethodPost, wire.PathEnvironments, createBody, nil)
	pbase := "/v1/environments/" + createResult(t, status, body).Environment.ID
	status, body = do(t, plain, http.MethodPost, pbase+"/checkpoints", `{"operationId":"op-1","request":{}}`, nil)
	wantError(t, status, body, http.StatusUnprocessableEntity, wire.CodeUnsupported, nil)
}

// BRN-03 over the wire: a durable checkpoint whose answer is lost after
// the provider checkpointed is re-sent with the same key and answered
// replayed with the same checkpoint; a lookup finds that one.
func TestRemoteDurableCheckpointLostAnswer(t *testing.T) {
	p := newScripted(t)
	rp, hits := faultyRemote(t, p, pathEnds("/branching/checkpoint"), 0)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	env, err := rp.Create(ctx, createInput(""))
	if err != nil {
		t.Fatal(err)
	}
	ref, err := env.(contract.Dispatcher).Dispatch(ctx, &contract.TurnInput{Prompt: ptr("hi")})
	if err != nil {
		t.Fatal(err)
	}
	sess, err := env.(contract.SessionOpener).Session(ctx, ref.ID, ref.ControlRef)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := sess.Result(ctx); err != nil {
		t.Fatal(err)
	}
	c := ref.ControlRef
	run := contract.ExactRunControlRef{RunID: c.RunID, Provider: c.Provider, EnvironmentID: c.EnvironmentID,
		SessionID: *c.SessionID, ExecutionID: *c.ExecutionID, RequestDigest: *c.RequestDigest}
	req, err := contract.NewWorkspaceCheckpointRequest("cp-1", contract.WorkspaceCheckpointMaterial{Source: run})
	if err != nil {
		t.Fatal(err)
	}
	br := env.(contract.DurableBrancher).WorkspaceBranching()
	res, err := br.Checkpoint(ctx, req)
	if err != nil {
		t.Fatalf("Checkpoint: %v", err)
	}
	if hits.Load() != 2 {
		t.Errorf("the checkpoint was sent %d times, want 2 (the first answer lost)", hits.Load())
	}
	if res.Status != contract.BranchingReplayed || !contract.WorkspaceCheckpointResultMatchesRequest(req, res) {
		t.Fatalf("the re-sent checkpoint answered %s, want replayed matching the request", res.Status)
	}
	found, err := br.LookupCheckpoint(ctx, req.Lookup())
	if err != nil || !contract.WorkspaceCheckpointLookupResultMatchesRequest(req, found) || found.Checkpoint.CheckpointID != res.Checkpoint.CheckpointID {
		t.Errorf("the lookup: %+v, %v; want the one checkpoint", found, err)
	}
}

// turnAttacher is what fleet uses to settle work in doubt: following a
// turn by id without ever starting it.
type turnAttacher interface {
	AttachTurn(ctx context.Context, in *contract.TurnInput) iter.Seq2[contract.EnvironmentEvent, error]
}

// Attaching to a turn the server still holds replays it; attaching to
// one it forgot (here evicted by the next turn, as after its retention
// or a restart) fails with contract.ErrTurnGone and runs nothing: a
// plain POST of the same turn id used to run the forgotten work again.
func TestAttachNeverRunsAForgottenTurn(t *testing.T) {
	p := newScripted(t)
	ts, _ := serve(t, p, sidecar.Options{MaxTurns: 1})
	rp := newRemote(t, ts.URL)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	env, err := rp.Create(ctx, &contract.CreateInput{Profile: profile.Ref{Inline: &profile.Profile{Name: profile.Ptr("t")}}})
	if err != nil {
		t.Fatal(err)
	}
	turn := func(id string) *contract.TurnInput {
		return &contract.TurnInput{TurnID: &id, Prompt: profile.Ptr("hi")}
	}
	drain := func(seq iter.Seq2[contract.EnvironmentEvent, error]) (int, error) {
		n := 0
		for _, err := range seq {
			if err != nil {
				return n, err
			}
			n++
		}
		return n, nil
	}
	if _, err := drain(env.Stream(ctx, turn("t1"))); err != nil {
		t.Fatal(err)
	}
	a, ok := env.(turnAttacher)
	if !ok {
		t.Fatalf("%T cannot attach to turns", env)
	}
	if n, err := drain(a.AttachTurn(ctx, turn("t1"))); err != nil || n == 0 {
		t.Fatalf("attaching to a held turn: %d events, %v; want its replay", n, err)
	}
	if _, err := drain(env.Stream(ctx, turn("t2"))); err != nil { // evicts t1
		t.Fatal(err)
	}
	before := p.Turns()
	if _, err := drain(a.AttachTurn(ctx, turn("t1"))); !errors.Is(err, contract.ErrTurnGone) {
		t.Fatalf("attaching to a forgotten turn: %v, want contract.ErrTurnGone", err)
	}
	if n := p.Turns() - before; n != 0 {
		t.Errorf("attaching ran %d turns; want none", n)
	}
}

// A turn POST whose answer was lost after it reached the server is
// retried as a resume (Last-Event-ID: 0), never as a fresh start: a
// server that restarted meanwhile answers that it does not hold the
// turn instead of running it a second time, and one that holds it
// replays it from its first event. The turn ran once.
func TestLostTurnPostIsRetriedAsAResume(t *testing.T) {
	p := newScripted(t)
	_, s := serve(t, p, sidecar.Options{})
	isTurn := func(r *http.Request) bool {
		return r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, "/turns")
	}
	h, hits := faulty(s, isTurn, 0)
	var mu sync.Mutex
	var resumes []string
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if isTurn(r) {
			mu.Lock()
			resumes = append(resumes, r.Header.Get(wire.HeaderLastEventID))
			mu.Unlock()
		}
		h.ServeHTTP(w, r)
	}))
	defer ts.Close()
	rp := newRemote(t, ts.URL)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	env, err := rp.Create(ctx, &contract.CreateInput{Profile: profile.Ref{Inline: &profile.Profile{Name: profile.Ptr("t")}}})
	if err != nil {
		t.Fatal(err)
	}
	id := "lost-post"
	n := 0
	for _, err := range env.Stream(ctx, &contract.TurnInput{TurnID: &id, Prompt: profile.Ptr("hi")}) {
		if err != nil {
			t.Fatalf("stream: %v", err)
		}
		n++
	}
	if hits.Load() < 2 || n == 0 {
		t.Fatalf("%d turn requests, %d events; want the lost one and its retry, and the turn's events", hits.Load(), n)
	}
	mu.Lock()
	defer mu.Unlock()
	if resumes[0] != "" || resumes[1] != "0" {
		t.Errorf("Last-Event-ID of the turn requests %q; want none on the first, 0 on the retry", resumes)
	}
	if got := p.Turns(); got != 1 {
		t.Errorf("the provider ran %d turns; want 1", got)
	}
}

// An event past the stream's 1 MiB event limit ends the turn with a
// clear error naming it: no reader could read past it, so it used to
// break every stream and every reconnect, and the turn read as lost in
// doubt though it was over.
func TestEventPastTheLimitEndsTheTurn(t *testing.T) {
	big := strings.Repeat("x", wire.MaxBodyBytes+1000)
	sc, err := scripted.ParseScript([]byte(`{"turns":[{"repeat":true,"steps":[{"text":"before"},{"text":"` + big + `"},{"text":"after"}]}]}`))
	if err != nil {
		t.Fatal(err)
	}
	ts, _ := serve(t, scripted.New(sc, scripted.Options{}), sidecar.Options{})
	rp := newRemote(t, ts.URL)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	env, err := rp.Create(ctx, &contract.CreateInput{Profile: profile.Ref{Inline: &profile.Profile{Name: profile.Ptr("t")}}})
	if err != nil {
		t.Fatal(err)
	}
	var last error
	events := 0
	for _, err := range env.Stream(ctx, &contract.TurnInput{Prompt: profile.Ptr("hi")}) {
		if err != nil {
			last = err
			break
		}
		events++
	}
	if last == nil || !strings.Contains(last.Error(), "event limit") || strings.Contains(last.Error(), "lost") {
		t.Fatalf("after %d events: %v; want the turn ended naming the event limit, not a lost stream", events, last)
	}
}
