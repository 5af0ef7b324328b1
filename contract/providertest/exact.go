package providertest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"iter"
	"maps"
	"reflect"
	"slices"
	"sync/atomic"
	"time"

	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/contract"
)

// ExactProcessOptions are the inputs of the exact-process-lifecycle family
// (the testkit's runAgentExactProcessProviderLifecycleChecks: createInput,
// launch, expectedStdout, expectedStderr, timeoutMs), required when the
// provider declares exactProcess.
type ExactProcessOptions struct {
	// CreateInput is the exact environment the family creates. Required.
	// Its egress mode must be one the provider declares. The family
	// appends a per-run suffix to its idempotency key and sets the
	// metadata member "providertest" to a per-run value, so runs against
	// a provider that keeps its keys never collide and the metadata query
	// selects only this run's environment.
	CreateInput *contract.CreateExactProcessInput
	// Launch is a process that exits on its own within Timeout, printing
	// exactly ExpectedStdout and ExpectedStderr. Required.
	Launch *contract.ExactProcessLaunch
	// ExpectedStdout and ExpectedStderr are the launch's exact output
	// bytes.
	ExpectedStdout, ExpectedStderr string
	// Timeout bounds the whole family; 0 means 30 seconds (the testkit's
	// default timeoutMs).
	Timeout time.Duration
}

// exactFilePath is where exact-file-roundtrip writes; every image has a
// writable /tmp.
const exactFilePath = "/tmp/providertest-exact-file.bin"

// exactRuns makes every run's key and metadata marker unique.
var exactRuns atomic.Int64

// exactInputCopy is a copy of in that shares nothing mutable with it.
func exactInputCopy(in *contract.CreateExactProcessInput) *contract.CreateExactProcessInput {
	cp := *in
	cp.Metadata = maps.Clone(in.Metadata)
	if cp.Metadata == nil {
		cp.Metadata = map[string]canonjson.Value{}
	}
	cp.ProviderOptions = maps.Clone(in.ProviderOptions)
	cp.Egress.AllowDomains = slices.Clone(in.Egress.AllowDomains)
	if in.ProvisionTimeoutMs != nil {
		v := *in.ProvisionTimeoutMs
		cp.ProvisionTimeoutMs = &v
	}
	return &cp
}

// readAll drains one output stream of a process.
func readAll(seq iter.Seq2[[]byte, error]) ([]byte, error) {
	var out []byte
	for chunk, err := range seq {
		if err != nil {
			return out, err
		}
		out = append(out, chunk...)
	}
	return out, nil
}

// undeclaredEgress is an egress policy the provider's exact processes do
// not declare: strict or blocked when one is missing from the list, else
// open, which no exact environment accepts.
func undeclaredEgress(declared []contract.EgressMode) (contract.EgressPolicy, bool) {
	switch {
	case !slices.Contains(declared, contract.EgressStrict):
		return contract.EgressPolicy{Mode: contract.EgressStrict, AllowDomains: []string{"example.com"}}, true
	case !slices.Contains(declared, contract.EgressBlocked):
		return contract.EgressPolicy{Mode: contract.EgressBlocked}, true
	}
	return contract.EgressPolicy{Mode: contract.EgressOpen}, false
}

// exactProcessLifecycle is the testkit's exact-process lifecycle family
// (spec J, L.6, O.46-48; checklist EXP-01..EXP-13), with its step names:
// exact-process-capability (facet offered, requested egress mode
// declared, an undeclared mode refused), exact-process-idempotency (a
// repeated create returns the same environment),
// exact-process-idempotency-collision (the same key with maxLifetimeMs +
// 1000 is refused), fresh-environment (no process listed),
// exact-file-roundtrip (bytes 00 01 02 FF written with mode 0640 read
// back exactly; maxBytes one short refused), exact-process-run (the
// spawned pid is listed, stdout and stderr are exact, the terminal
// status's termination equals Wait's, kill after exit succeeds),
// exact-process-recovery (Get(id) then Processes().Get(pid) — through a
// reconnected client when Options.Reconnect is set — replays identical
// output and termination; unknown and ordinary ids are nil),
// exact-process-list (the metadata query returns exactly this
// environment) and exact-process-destroy (afterwards Get is nil and List
// omits it).
func exactProcessLifecycle(t TB, p contract.Provider, opts Options) {
	c := caps(t, p)
	if c.ExactProcess == nil {
		t.Skip("the provider declares no exactProcess")
	}
	o := opts.ExactProcess
	if o.CreateInput == nil || o.Launch == nil {
		t.Fatal("exactProcess is declared, but Options.ExactProcess lacks CreateInput or Launch: the ability cannot be proven")
	}
	if _, err := contract.Validate(contract.KindExactProcessLaunch, contract.ExactProcessLaunchSchema, o.Launch); err != nil {
		t.Fatalf("Options.ExactProcess.Launch is invalid: %v", err)
	}
	timeout := o.Timeout
	if timeout <= 0 {
		timeout = 30 * time.Second
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	t.Cleanup(cancel)

	run := fmt.Sprintf("%d-%d", time.Now().UnixNano(), exactRuns.Add(1))
	in := exactInputCopy(o.CreateInput)
	in.IdempotencyKey += "-providertest-" + run
	in.Metadata["providertest"] = canonjson.StringValue(run)
	if _, err := contract.Validate(contract.KindCreateExactProcessInput, contract.CreateExactProcessInputSchema, in); err != nil {
		t.Fatalf("Options.ExactProcess.CreateInput is invalid: %v", err)
	}
	query := &contract.ExactProcessEnvironmentQuery{Metadata: maps.Clone(in.Metadata)}

	var (
		facet     contract.ExactProcessProvider
		env       contract.ExactProcessEnvironment
		destroyed bool
	)
	t.Cleanup(func() {
		if env != nil && !destroyed {
			env.Destroy(context.Background())
		}
	})
	// discard destroys an environment the provider should not have made.
	discard := func(got contract.ExactProcessEnvironment) {
		if got != nil && (env == nil || got.ID() != env.ID()) {
			got.Destroy(context.Background())
		}
	}

	ok := t.Step("exact-process-capability", func(t TB) {
		facet = ability[contract.ExactProcessHost](t, p, "ExactProcessHost", "exactProcess").ExactProcess()
		if facet == nil {
			t.Fatal("exactProcess is declared, but ExactProcess returned nil")
		}
		if !slices.Contains(c.ExactProcess.Egress, in.Egress.Mode) {
			t.Fatalf("the create input's egress mode %q is not declared (exactProcess.egress %v)", in.Egress.Mode, c.ExactProcess.Egress)
		}
		// An undeclared mode is refused, never weakened or widened.
		egress, valid := undeclaredEgress(c.ExactProcess.Egress)
		other := exactInputCopy(in)
		other.IdempotencyKey += "-undeclared-egress"
		other.Metadata["providertest"] = canonjson.StringValue(run + "-undeclared-egress")
		other.Egress = egress
		got, err := facet.Create(ctx, other)
		switch {
		case err == nil:
			discard(got)
			t.Errorf("egress mode %q is not declared, yet create accepted it", egress.Mode)
		case valid && !errors.Is(err, contract.ErrUnsupported):
			t.Errorf("the refusal of undeclared egress mode %q does not match contract.ErrUnsupported: %v", egress.Mode, err)
		}
	})
	if !ok {
		return
	}
	ok = t.Step("exact-process-idempotency", func(t TB) {
		first, err := facet.Create(ctx, exactInputCopy(in))
		if err != nil {
			t.Fatalf("Create: %v", err)
		}
		if first == nil {
			t.Fatal("Create returned no environment")
		}
		env = first
		if env.ID() == "" || env.Provider() != p.Name() {
			t.Errorf("environment id %q, provider %q; want an id and %q", env.ID(), env.Provider(), p.Name())
		}
		again, err := facet.Create(ctx, exactInputCopy(in))
		if err != nil {
			t.Fatalf("repeated Create: %v", err)
		}
		if again == nil || again.ID() != env.ID() || again.Provider() != env.Provider() {
			discard(again)
			t.Errorf("a repeated create returned another environment than %s", env.ID())
		}
	})
	if !ok || env == nil {
		return
	}
	t.Step("exact-process-idempotency-collision", func(t TB) {
		changed := exactInputCopy(in)
		changed.MaxLifetimeMs += 1000
		got, err := facet.Create(ctx, changed)
		if err == nil {
			discard(got)
			t.Fatal("the same key with a changed maxLifetimeMs was accepted")
		}
		if !errors.Is(err, contract.ErrIdempotencyConflict) {
			t.Errorf("the collision error %v does not match contract.ErrIdempotencyConflict", err)
		}
	})
	t.Step("fresh-environment", func(t TB) {
		list, err := env.Processes().List(ctx)
		if err != nil {
			t.Fatalf("Processes().List: %v", err)
		}
		if len(list) != 0 {
			t.Errorf("a fresh environment lists %d processes", len(list))
		}
	})
	t.Step("exact-file-roundtrip", func(t TB) {
		want := []byte{0x00, 0x01, 0x02, 0xFF}
		if err := env.WriteFile(ctx, exactFilePath, want, 0o640); err != nil {
			t.Fatalf("WriteFile: %v", err)
		}
		got, err := env.ReadFile(ctx, exactFilePath, int64(len(want)))
		if err != nil || !bytes.Equal(got, want) {
			t.Fatalf("ReadFile = % x, %v; want % x", got, err, want)
		}
		short, err := env.ReadFile(ctx, exactFilePath, int64(len(want)-1))
		if err == nil {
			t.Errorf("a read bounded one byte short returned % x", short)
		} else if !errors.Is(err, contract.ErrFileTooLarge) || len(short) != 0 {
			t.Errorf("a read bounded one byte short: % x, %v; want nothing and contract.ErrFileTooLarge", short, err)
		}
		if again, err := env.ReadFile(ctx, exactFilePath, int64(len(want))); err != nil || !bytes.Equal(again, want) {
			t.Errorf("a read changed the file: % x, %v", again, err)
		}
	})

	var (
		proc           contract.ExactProcess
		stdout, stderr []byte
		term           *contract.ProcessTermination
	)
	ran := t.Step("exact-process-run", func(t TB) {
		launched, err := env.Processes().Spawn(ctx, o.Launch)
		if err != nil {
			t.Fatalf("Spawn: %v", err)
		}
		proc = launched
		list, err := env.Processes().List(ctx)
		if err != nil {
			t.Fatalf("Processes().List: %v", err)
		}
		if !slices.ContainsFunc(list, func(s contract.ExactProcessStatus) bool { return s.PID == proc.PID() }) {
			t.Errorf("spawned pid %d is not listed", proc.PID())
		}
		if stdout, err = readAll(proc.Stdout(ctx)); err != nil {
			t.Fatalf("stdout: %v", err)
		}
		if stderr, err = readAll(proc.Stderr(ctx)); err != nil {
			t.Fatalf("stderr: %v", err)
		}
		if string(stdout) != o.ExpectedStdout || string(stderr) != o.ExpectedStderr {
			t.Errorf("stdout %q, stderr %q; want %q and %q", stdout, stderr, o.ExpectedStdout, o.ExpectedStderr)
		}
		if term, err = proc.Wait(ctx); err != nil {
			t.Fatalf("Wait: %v", err)
		}
		if _, err := contract.Validate(contract.KindProcessTermination, contract.ProcessTerminationSchema, term); err != nil {
			t.Fatalf("Wait's termination is invalid: %v", err)
		}
		checkTerminal := func(when string) {
			st, err := proc.Status(ctx)
			if err != nil {
				t.Fatalf("Status %s: %v", when, err)
			}
			if _, err := contract.Validate(contract.KindExactProcessStatus, contract.ExactProcessStatusSchema, st); err != nil {
				t.Errorf("the status %s is invalid: %v", when, err)
			}
			if st.PID != proc.PID() || st.Running || !contract.SameProcessTermination(st.Termination, term) {
				t.Errorf("the status %s (pid %d, running %v, termination %s) is not terminal with Wait's termination %s",
					when, st.PID, st.Running, wire(st.Termination), wire(term))
			}
		}
		checkTerminal("after Wait")
		if err := proc.Kill(ctx); err != nil {
			t.Errorf("Kill after exit: %v", err)
		}
		checkTerminal("after a kill after exit")
	})
	if ran && proc != nil && term != nil {
		t.Step("exact-process-recovery", func(t TB) {
			host := ability[contract.ExactProcessHost](t, opts.reconnect(p), "ExactProcessHost", "exactProcess")
			client := host.ExactProcess()
			if client == nil {
				t.Fatal("a reconnected client's ExactProcess returned nil")
			}
			got, err := client.Get(ctx, env.ID())
			if err != nil || got == nil {
				t.Fatalf("Get(%s) = %v, %v; want the environment", env.ID(), got, err)
			}
			if got.ID() != env.ID() || got.Provider() != env.Provider() || !sameMetadata(got.Metadata(), in.Metadata) {
				t.Errorf("Get(%s) returned %s/%s with metadata %v", env.ID(), got.Provider(), got.ID(), got.Metadata())
			}
			rp, err := got.Processes().Get(ctx, proc.PID())
			if err != nil || rp == nil {
				t.Fatalf("Processes().Get(%d) = %v, %v; want the process", proc.PID(), rp, err)
			}
			out, err := readAll(rp.Stdout(ctx))
			if err != nil {
				t.Fatalf("recovered stdout: %v", err)
			}
			errOut, err := readAll(rp.Stderr(ctx))
			if err != nil {
				t.Fatalf("recovered stderr: %v", err)
			}
			if rp.PID() != proc.PID() || !bytes.Equal(out, stdout) || !bytes.Equal(errOut, stderr) {
				t.Errorf("the recovered process %d replays stdout %q, stderr %q; the original %q and %q", rp.PID(), out, errOut, stdout, stderr)
			}
			rt, err := rp.Wait(ctx)
			if err != nil || !contract.SameProcessTermination(rt, term) {
				t.Errorf("the recovered process ended %s (%v); the original %s", wire(rt), err, wire(term))
			}
			if st, err := rp.Status(ctx); err != nil || st.Running || !contract.SameProcessTermination(st.Termination, term) {
				t.Errorf("the recovered status %s (%v) lacks the original termination %s", wire(st), err, wire(term))
			}
			if none, err := got.Processes().Get(ctx, proc.PID()+1_000_000); err != nil || none != nil {
				t.Errorf("Processes().Get of an unknown pid = %v, %v; want nil, nil", none, err)
			}
			if none, err := client.Get(ctx, "providertest-no-such-environment"); err != nil || none != nil {
				t.Errorf("Get of an unknown id = %v, %v; want nil, nil", none, err)
			}
			if ordinary, ok := agentEnvironment(t, p, opts.createInput("")); ok {
				if none, err := client.Get(ctx, ordinary.ID()); err != nil || none != nil {
					t.Errorf("Get of an ordinary environment's id = %v, %v; want nil, nil", none, err)
				}
			} else {
				t.Log("an exact-process-only provider has no ordinary environment whose id Get could confuse")
			}
		})
	}
	t.Step("exact-process-list", func(t TB) {
		list, err := facet.List(ctx, query)
		if err != nil {
			t.Fatalf("List: %v", err)
		}
		if len(list) != 1 || list[0].ID() != env.ID() {
			ids := make([]string, len(list))
			for i, e := range list {
				ids[i] = e.ID()
			}
			t.Errorf("the metadata query returned %v; want exactly [%s]", ids, env.ID())
		}
		other := &contract.ExactProcessEnvironmentQuery{Metadata: maps.Clone(query.Metadata)}
		other.Metadata["providertest"] = canonjson.StringValue(run + "-other")
		if list, err := facet.List(ctx, other); err != nil || listed(list, env.ID()) {
			t.Errorf("a query whose metadata differs in one member selects %s (%v)", env.ID(), err)
		}
	})
	t.Step("exact-process-destroy", func(t TB) {
		if err := env.Destroy(ctx); err != nil {
			t.Fatalf("Destroy: %v", err)
		}
		destroyed = true
		if got, err := facet.Get(ctx, env.ID()); err != nil || got != nil {
			t.Errorf("Get of a destroyed environment = %v, %v; want nil, nil", got, err)
		}
		list, err := facet.List(ctx, query)
		if err != nil {
			t.Fatalf("List: %v", err)
		}
		if listed(list, env.ID()) {
			t.Errorf("destroyed environment %s is still listed", env.ID())
		}
	})
}

// wire is v's canonical JSON, for messages.
func wire(v any) string {
	if rv := reflect.ValueOf(v); !rv.IsValid() || rv.Kind() == reflect.Pointer && rv.IsNil() {
		return "none"
	}
	cv, err := canonjson.ToValue(v)
	if err != nil {
		return fmt.Sprintf("%+v", v)
	}
	b, err := canonjson.Canonical(cv)
	if err != nil {
		return fmt.Sprintf("%+v", v)
	}
	return string(b)
}

func listed(list []contract.ExactProcessEnvironment, id string) bool {
	return slices.ContainsFunc(list, func(e contract.ExactProcessEnvironment) bool { return e.ID() == id })
}

func sameMetadata(a, b map[string]canonjson.Value) bool {
	return maps.EqualFunc(a, b, canonjson.Equal)
}
