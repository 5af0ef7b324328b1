package clibridge

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"iter"
	"maps"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/contract"
	"github.com/agentrt/agentrt/profile"
)

// Errors of turn admission. Each is wrapped, and each refusal happens
// before any process is spawned.
var (
	// ErrDestroyed: the environment was destroyed. It wraps
	// contract.ErrDestroyed.
	ErrDestroyed = fmt.Errorf("clibridge: %w", contract.ErrDestroyed)
	// ErrBusy: the environment's current turn has not ended.
	ErrBusy = errors.New("clibridge: the environment's current turn has not ended")
	// ErrNoPrompt: the turn carries no prompt text.
	ErrNoPrompt = errors.New("clibridge: the turn has no prompt")
	// errTurnTimeout is the cause of a turn's own deadline (timeoutMs).
	errTurnTimeout = errors.New("clibridge: the turn's timeoutMs elapsed")
)

// envState is one environment as the provider holds it.
type envState struct {
	p        *Provider
	id, name string
	dirs     dirs
	env      map[string]string
	profile  *profile.Profile
	metadata map[string]canonjson.Value

	mu        sync.Mutex
	destroyed bool
	busy      bool
	// cancel stops the running turn and done is closed when it has
	// ended (Destroy).
	cancel context.CancelFunc
	done   chan struct{}
	turns  []TurnRecord
}

func (st *envState) isDestroyed() bool {
	st.mu.Lock()
	defer st.mu.Unlock()
	return st.destroyed
}

// Environment is one bridge environment: a working directory and an
// isolated HOME in which each turn runs the harness CLI once. It
// implements contract.Environment and no optional ability.
type Environment struct {
	st       *envState
	creation contract.Creation
}

var _ contract.Environment = (*Environment)(nil)

// ID implements contract.Environment.
func (e *Environment) ID() string { return e.st.id }

// Provider implements contract.Environment.
func (e *Environment) Provider() string { return e.st.p.cfg.name }

// Name implements contract.Environment.
func (e *Environment) Name() string { return e.st.name }

// Creation implements contract.Environment.
func (e *Environment) Creation() contract.Creation { return e.creation }

// Metadata implements contract.Environment: a detached copy.
func (e *Environment) Metadata() map[string]canonjson.Value { return maps.Clone(e.st.metadata) }

// Capabilities implements contract.Environment: the provider's document
// applies.
func (e *Environment) Capabilities() *contract.Capabilities { return nil }

// WorkDir returns the harness's working directory (the workspace).
func (e *Environment) WorkDir() string { return e.st.dirs.work }

// Status implements contract.Environment.
func (e *Environment) Status(ctx context.Context) (contract.EnvironmentStatus, error) {
	if e.st.isDestroyed() {
		return contract.EnvironmentStopped, nil
	}
	return contract.EnvironmentRunning, nil
}

// Turns returns the records of the environment's ended turns, oldest
// first: each one's receipt and outcome (including the private native
// session id).
func (e *Environment) Turns() []TurnRecord {
	e.st.mu.Lock()
	defer e.st.mu.Unlock()
	return slices.Clone(e.st.turns)
}

// Destroy implements contract.Environment: a running turn is cancelled
// (its process group killed) and the environment's directories are
// removed.
func (e *Environment) Destroy(ctx context.Context) error {
	st := e.st
	st.mu.Lock()
	st.destroyed = true
	cancel, done := st.cancel, st.done
	st.mu.Unlock()
	if cancel != nil {
		cancel()
		// The running turn kills its process group; wait for it, so no
		// process writes into the directories being removed.
		select {
		case <-done:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	st.p.mu.Lock()
	delete(st.p.envs, st.id)
	st.p.mu.Unlock()
	if err := os.RemoveAll(st.dirs.root); err != nil {
		return fmt.Errorf("clibridge: removing environment %s: %w", st.id, err)
	}
	return nil
}

// Stream implements contract.Environment: it runs one turn and yields
// its public events. The private native session observation is withheld
// (see StreamOwned); everything else is as StreamOwned yields it.
func (e *Environment) Stream(ctx context.Context, in *contract.TurnInput) iter.Seq2[contract.EnvironmentEvent, error] {
	return func(yield func(contract.EnvironmentEvent, error) bool) {
		for ev, err := range e.StreamOwned(ctx, in) {
			if err == nil && contract.IsPrivateEnvironmentEvent(ev) {
				continue
			}
			if !yield(ev, err) {
				return
			}
		}
	}
}

// StreamOwned runs one turn and yields every event, including the
// private native.session.observed event, for the execution owner only: it
// must never be forwarded to a public stream.
//
// A turn the bridge cannot honor (its profile, its input, a destroyed or
// busy environment) is refused before anything is spawned: the first and
// only yield carries the error. Otherwise the first event is the
// materialization receipt ("clibridge.materialization"), then the
// normalized stream, then exactly one terminal event: completed only for
// a successful result and exit status 0, cancelled when ctx ended the
// turn (the process group is killed), failed otherwise.
func (e *Environment) StreamOwned(ctx context.Context, in *contract.TurnInput) iter.Seq2[contract.EnvironmentEvent, error] {
	return func(yield func(contract.EnvironmentEvent, error) bool) {
		st := e.st
		if err := ctx.Err(); err != nil {
			yield(contract.EnvironmentEvent{}, err)
			return
		}
		spec, err := st.admit(in)
		if err != nil {
			yield(contract.EnvironmentEvent{}, err)
			return
		}
		ctx, cancel := context.WithCancel(ctx)
		done := make(chan struct{})
		defer func() {
			cancel()
			st.mu.Lock()
			st.busy, st.cancel, st.done = false, nil, nil
			st.mu.Unlock()
			close(done)
		}()
		st.mu.Lock()
		st.cancel, st.done = cancel, done
		st.mu.Unlock()
		// The turn's own deadline ends it as failed (timed out), not as
		// cancelled: only the caller cancels.
		procCtx := ctx
		if spec.timeout > 0 {
			var stop context.CancelFunc
			procCtx, stop = context.WithTimeoutCause(ctx, spec.timeout, errTurnTimeout)
			defer stop()
		}
		// A line that shows the turn cannot run as declared stops it
		// (aborter), failed rather than cancelled.
		procCtx, abort := context.WithCancelCause(procCtx)
		defer abort(nil)
		d := st.p.cfg.driver
		pl, err := d.materialize(spec)
		if err != nil {
			yield(contract.EnvironmentEvent{}, err)
			return
		}
		rec := TurnRecord{Turn: spec.turn, Receipt: pl.receipt}
		rec.Receipt.Harness, rec.Receipt.Binary = d.harness(), st.p.cfg.binary
		rec.Receipt.Applied.PromptDigest = textDigest(spec.prompt)
		if spec.profile != nil {
			if rec.Receipt.ProfileDigest, err = profile.Digest(spec.profile); err != nil {
				yield(contract.EnvironmentEvent{}, fmt.Errorf("clibridge: profile digest: %w", err))
				return
			}
		}
		for name, value := range traceEnv(ctx) {
			pl.env[name] = value
		}
		environ := st.environ(pl.env)
		for _, kv := range environ {
			name, _, _ := strings.Cut(kv, "=")
			rec.Receipt.EnvNames = append(rec.Receipt.EnvNames, name)
		}
		slices.Sort(rec.Receipt.EnvNames)
		if rec.ReceiptDigest, err = rec.Receipt.Digest(); err != nil {
			yield(contract.EnvironmentEvent{}, fmt.Errorf("clibridge: receipt digest: %w", err))
			return
		}
		if err := writeFiles(pl.files); err != nil {
			yield(contract.EnvironmentEvent{}, err)
			return
		}
		receipt, err := receiptEvent(&rec)
		if err != nil {
			yield(contract.EnvironmentEvent{}, err)
			return
		}
		if !yield(receipt, nil) {
			return
		}
		n := d.normalizer(spec)
		stopped := false
		emit := func(evs []contract.EnvironmentEvent) {
			for _, ev := range evs {
				if !stopped && !yield(ev, nil) {
					// The consumer left: end the turn as cancelled.
					stopped = true
					cancel()
				}
			}
		}
		cfg := st.p.cfg
		h := cfg.hooks
		x := run(procCtx, proc{binary: cfg.binary, args: pl.args, dir: st.dirs.work, env: environ, stdin: spec.prompt,
			logDir: st.dirs.bridge, secrets: spec.secrets(), onSpawn: h.onSpawn, exitGrace: h.exitGrace}, func(line []byte) bool {
			if h.onLine != nil {
				h.onLine(line)
			}
			emit(n.line(line))
			if a, ok := n.(aborter); ok {
				if why := a.abortReason(); why != "" {
					abort(&turnAborted{why: why})
				}
			}
			lw, ok := n.(lastWorder)
			return ok && lw.said()
		})
		var aborted *turnAborted
		switch cause := context.Cause(procCtx); {
		case !x.cancelled || ctx.Err() != nil:
		case errors.Is(cause, errTurnTimeout):
			x.cancelled, x.timedOut = false, spec.timeout
		case errors.As(cause, &aborted):
			x.cancelled, x.aborted = false, aborted.why
		}
		if h.onExit != nil {
			h.onExit(x)
		}
		emit(n.end(x))
		rec.Outcome = n.outcome()
		st.mu.Lock()
		st.turns = append(st.turns, rec)
		st.mu.Unlock()
	}
}

// turnAborted is the cause of a turn the bridge stopped because a line
// showed it cannot run as the profile declared (aborter).
type turnAborted struct{ why string }

func (e *turnAborted) Error() string { return "clibridge: turn stopped: " + e.why }

// admit checks one turn and reserves the environment for it.
func (st *envState) admit(in *contract.TurnInput) (*turnSpec, error) {
	if in == nil {
		in = &contract.TurnInput{}
	}
	prompt, err := turnPrompt(in)
	if err != nil {
		return nil, err
	}
	pr := st.profile
	if in.Profile != nil {
		pr = in.Profile
		if err := st.p.checkProfile(pr); err != nil {
			return nil, err
		}
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	switch {
	case st.destroyed:
		return nil, fmt.Errorf("%w: %s", ErrDestroyed, st.id)
	case st.busy:
		return nil, fmt.Errorf("%w: %s", ErrBusy, st.id)
	}
	st.busy = true
	cfg := st.p.cfg
	spec := &turnSpec{provider: cfg.name, turn: len(st.turns) + 1, prompt: prompt, profile: pr, dirs: st.dirs,
		baseURL: cfg.baseURL, apiKey: cfg.apiKey, fallbackModel: cfg.model}
	if in.Model != nil {
		spec.model = *in.Model
	}
	if in.TimeoutMs != nil {
		spec.timeout = time.Duration(*in.TimeoutMs) * time.Millisecond
	}
	return spec, nil
}

// turnPrompt refuses what a turn asks that the bridge cannot do and
// returns its prompt: the prompt, then every text part, joined by blank
// lines.
func turnPrompt(in *contract.TurnInput) (string, error) {
	refuse := func(field string) error {
		return fmt.Errorf("clibridge: turn %s: %w", field, contract.ErrUnsupported)
	}
	switch {
	case in.Detach != nil && *in.Detach:
		return "", refuse("detach (the bridge declares no streaming.detach)")
	case in.ControlRef != nil:
		return "", refuse("controlRef (the bridge declares no retained control)")
	case in.ContextTransfer != nil:
		return "", refuse("contextTransfer")
	case in.NativeContinuation != nil:
		return "", refuse("nativeContinuation")
	case len(in.Interactions) > 0:
		return "", refuse("interactions (the bridge declares none)")
	case in.LastEventID != nil:
		return "", refuse("lastEventId (the bridge declares no replay)")
	}
	var texts []string
	if in.Prompt != nil && *in.Prompt != "" {
		texts = append(texts, *in.Prompt)
	}
	for i, part := range in.Parts {
		if part.Type != contract.PartTypeText || part.Text == nil {
			return "", refuse(fmt.Sprintf("part %d of type %s (only text parts reach the harness)", i, part.Type))
		}
		texts = append(texts, *part.Text)
	}
	prompt := strings.Join(texts, "\n\n")
	if strings.TrimSpace(prompt) == "" {
		return "", ErrNoPrompt
	}
	if strings.ContainsRune(prompt, 0) {
		return "", refuse("prompt with a NUL byte")
	}
	return prompt, nil
}

// environ is the harness process's whole environment: PATH from the
// bridge's own, HOME and TMPDIR of the environment, the caller's
// variables, then the driver's. Nothing else of the bridge's environment
// is inherited.
func (st *envState) environ(driverEnv map[string]string) []string {
	all := map[string]string{"PATH": os.Getenv("PATH"), "HOME": st.dirs.home, "TMPDIR": st.dirs.tmp}
	maps.Copy(all, st.env)
	maps.Copy(all, driverEnv)
	out := make([]string, 0, len(all))
	for _, name := range slices.Sorted(maps.Keys(all)) {
		out = append(out, name+"="+all[name])
	}
	return out
}

// writeFiles writes a plan's files (owner-only).
func writeFiles(files []planFile) error {
	for _, f := range files {
		if err := os.WriteFile(f.path, f.content, 0o600); err != nil {
			return fmt.Errorf("clibridge: writing %s: %w", f.rel, err)
		}
	}
	return nil
}

// receiptEvent is the turn's first event: the materialization receipt
// and its digest, with no normalized form.
func receiptEvent(rec *TurnRecord) (contract.EnvironmentEvent, error) {
	v, err := canonjson.ToValue(&rec.Receipt)
	if err != nil {
		return contract.EnvironmentEvent{}, fmt.Errorf("clibridge: receipt: %w", err)
	}
	id := fmt.Sprintf("turn-%d-0", rec.Turn)
	return contract.EnvironmentEvent{Type: "clibridge.materialization", ID: &id, Data: map[string]canonjson.Value{
		"receipt": v, "receiptDigest": canonjson.StringValue(rec.ReceiptDigest)}}, nil
}

// secrets are the turn's strings that never leave the bridge: the API
// key and the model endpoint.
func (t *turnSpec) secrets() []string {
	var out []string
	for _, s := range []string{t.apiKey, t.baseURL} {
		if s != "" {
			out = append(out, s)
		}
	}
	return out
}

// redact replaces every secret in b.
func redact(b []byte, secrets []string) []byte {
	for _, s := range secrets {
		b = bytes.ReplaceAll(b, []byte(s), []byte("[redacted]"))
	}
	return b
}

// traceEnv is the environment that carries the trace context ctx holds
// (a traced run's turn) to the harness process, so that its own spans
// join the run's trace (spec runtime §10): TRACEPARENT, the W3C
// traceparent, and the legacy TRACE_ID (32 hex) and PARENT_SPAN_ID (16
// hex) older harness wrappers read. Nil when ctx carries none.
func traceEnv(ctx context.Context) map[string]string {
	c := propagation.MapCarrier{}
	propagation.TraceContext{}.Inject(ctx, c)
	tp := c["traceparent"]
	if tp == "" {
		return nil
	}
	sc := trace.SpanContextFromContext(ctx)
	return map[string]string{"TRACEPARENT": tp, "TRACE_ID": sc.TraceID().String(), "PARENT_SPAN_ID": sc.SpanID().String()}
}
