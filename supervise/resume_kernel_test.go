package supervise_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentrt/agentrt/contract"
	"github.com/agentrt/agentrt/profile"
	"github.com/agentrt/agentrt/providers/scripted"
	"github.com/agentrt/agentrt/store"
	"github.com/agentrt/agentrt/store/memory"
	"github.com/agentrt/agentrt/supervise"
)

// unpricedOptions are baseOptions for workers whose provider reports
// tokens but no cost: the budget caps tokens and iterations only.
func unpricedOptions(t *testing.T, exec supervise.Executor) supervise.Options {
	o := baseOptions(t, exec, nil)
	o.Budget.MicroUSD, o.PerWorker.MicroUSD = nil, nil
	return o
}

// echoProvider is a scripted provider whose every turn answers
// "re: <prompt>"; it declares native continuation with an atomic
// boundary and request idempotency, and looks environments up by id.
func echoProvider(t *testing.T) *scripted.Provider {
	t.Helper()
	var script scripted.Script
	if err := json.Unmarshal([]byte(`{"turns": [{"repeat": true, "steps": [{"text": "re: {{prompt}}"}]}]}`), &script); err != nil {
		t.Fatal(err)
	}
	return scripted.New(&script, scripted.Options{})
}

// withoutNative is a provider that declares no native continuation, as
// a CLI bridge does: its sessions cannot be continued.
type withoutNative struct{ *scripted.Provider }

func (p withoutNative) Capabilities(ctx context.Context) (*contract.Capabilities, error) {
	caps, err := p.Provider.Capabilities(ctx)
	if err != nil {
		return nil, err
	}
	c := *caps
	c.NativeContinuation = nil
	return &c, nil
}

// diedBeforeRelease runs workers on a KernelExecutor but never releases
// their kept environments: it stands for a process that died before its
// run ended, leaving them with the provider.
type diedBeforeRelease struct{ e *supervise.KernelExecutor }

func (d diedBeforeRelease) Execute(ctx context.Context, w supervise.Work) (supervise.WorkResult, error) {
	return d.e.Execute(ctx, w)
}
func (d diedBeforeRelease) ResumesSessions() bool { return d.e.ResumesSessions() }

// draftThenResume is a brain that spawns a writer, awaits it, then
// spawns a continuity-resume writer and awaits it; replies are kept by
// step.
func draftThenResume(t *testing.T, got map[string]map[string]any) supervise.Brain {
	return supervise.BrainFunc(func(ctx context.Context, c *supervise.Coordinator, _ string) (supervise.BrainReport, error) {
		got["fresh"] = tool(t, ctx, c, supervise.VerbSpawnWorker, map[string]any{"profile": "writer", "task": "draft"})
		tool(t, ctx, c, supervise.VerbAwaitEvent, map[string]any{"timeoutMs": 60000})
		got["resume"] = tool(t, ctx, c, supervise.VerbSpawnWorker, map[string]any{"profile": "writer", "task": "revise", "continuity": "resume"})
		if got["resume"]["workerId"] != nil {
			got["settled"] = tool(t, ctx, c, supervise.VerbAwaitEvent, map[string]any{"timeoutMs": 60000})
		}
		return supervise.BrainReport{}, nil
	})
}

// draftBrain spawns one writer on the task "draft" and awaits its event.
func draftBrain(t *testing.T) supervise.Brain {
	return supervise.BrainFunc(func(ctx context.Context, c *supervise.Coordinator, _ string) (supervise.BrainReport, error) {
		tool(t, ctx, c, supervise.VerbSpawnWorker, map[string]any{"profile": "writer", "task": "draft"})
		tool(t, ctx, c, supervise.VerbAwaitEvent, map[string]any{"timeoutMs": 60000})
		return supervise.BrainReport{}, nil
	})
}

// runDiedBeforeRelease runs brain on dir as a process that dies with its
// kept session (a KernelExecutor over prov and st that never releases
// it) and before its journal's end: the run a restart resumes.
func runDiedBeforeRelease(t *testing.T, prov *scripted.Provider, st store.Store, dir string, brain supervise.Brain) {
	t.Helper()
	o := unpricedOptions(t, diedBeforeRelease{&supervise.KernelExecutor{Provider: prov, Store: st}})
	o.RunDir, o.Brain = dir, brain
	if _, err := supervise.Supervise(context.Background(), managerProfile(t, supervise.VerbSpawnWorker), "t", o); err != nil {
		t.Fatal(err)
	}
	crashBeforeFinish(t, filepath.Join(dir, supervise.SpawnJournalFile))
}

// settledByNode reads the run dir's settled records by node.
func settledByNode(t *testing.T, dir string) map[supervise.NodeID]supervise.Record {
	t.Helper()
	recs, _, err := supervise.ReadRunDir(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	out := map[supervise.NodeID]supervise.Record{}
	for _, r := range recs {
		if r.Kind == supervise.KindSettled {
			out[r.Node] = r
		}
	}
	return out
}

// envAlive reports whether the provider still has environment id.
func envAlive(t *testing.T, p *scripted.Provider, id string) bool {
	t.Helper()
	env, err := p.Get(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	return env != nil
}

// §3.6 Continuity, §15 behaviour 20 (with session support a later turn
// reuses the box and the session), RES-02, RG-11: on a provider that
// declares native continuation, KernelExecutor honours a resume spawn —
// the resumed worker continues the settled worker's session in the same
// environment (one create, one native continuation, the same native
// session id journaled for both), under its own node; the environment is
// kept until the run ends, then destroyed.
func TestKernelExecutorResumeContinuesTheSession(t *testing.T) {
	prov := echoProvider(t)
	exec := &supervise.KernelExecutor{Provider: prov, Store: memory.New(nil)}
	if !exec.ResumesSessions() {
		t.Fatal("KernelExecutor on a provider with native continuation does not resume sessions")
	}
	got := map[string]map[string]any{}
	o := unpricedOptions(t, exec)
	o.RunDir = t.TempDir()
	o.Brain = draftThenResume(t, got)
	res, err := supervise.Supervise(context.Background(), managerProfile(t, supervise.VerbSpawnWorker), "t", o)
	if err != nil {
		t.Fatal(err)
	}
	if got["resume"]["workerId"] != "run1:s2" {
		t.Fatalf("resume spawn: %v, want run1:s2", got["resume"])
	}
	if ev, _ := got["settled"]["event"].(map[string]any); ev["workerId"] != "run1:s2" || ev["output"] != "re: revise" {
		t.Errorf("the resumed worker's settlement: %v, want run1:s2 answering the new turn", got["settled"])
	}
	settled := settledByNode(t, o.RunDir)
	first, second := settled["run1:s1"], settled["run1:s2"]
	if first.State != supervise.StateDone || second.State != supervise.StateDone {
		t.Fatalf("settled %s and %s (%s), want both done", first.State, second.State, second.Reason)
	}
	if first.Session == "" || second.Session != first.Session {
		t.Errorf("native sessions %q then %q, want the same one", first.Session, second.Session)
	}
	if first.SessionRef == nil || second.SessionRef == nil || second.SessionRef.Run.EnvironmentID != first.SessionRef.Run.EnvironmentID ||
		second.SessionRef.Run.RunID == first.SessionRef.Run.RunID {
		t.Fatalf("session refs %+v then %+v, want the same environment, the second at a later run", first.SessionRef, second.SessionRef)
	}
	if c := prov.Counters(); prov.Creates() != 1 || c.NativeContinuations != 1 || c.FreshSessions != 0 {
		t.Errorf("provider saw %d creates, %+v; want one create and one native continuation", prov.Creates(), c)
	}
	if envAlive(t, prov, first.SessionRef.Run.EnvironmentID) {
		t.Error("the kept environment outlived the run")
	}
	if len(res.TeardownUnconfirmed) != 0 {
		t.Errorf("teardown unconfirmed: %+v", res.TeardownUnconfirmed)
	}
}

// §3.6 Continuity across a restart, §15 behaviour 46, RES-03, RG-09,
// RG-11: the process that ran the settled worker died (its kept
// environment left with the provider, its journal without an end); the
// process resuming the run looks the environment up by the journaled
// SessionRef and the resume spawn continues the same session — no
// second create, the same native session — and releases it at run end.
func TestKernelExecutorResumeAfterRestart(t *testing.T) {
	prov := echoProvider(t)
	st := memory.New(nil)
	dir := t.TempDir()
	runDiedBeforeRelease(t, prov, st, dir, draftBrain(t))
	first := settledByNode(t, dir)["run1:s1"]
	if first.SessionRef == nil || !envAlive(t, prov, first.SessionRef.Run.EnvironmentID) {
		t.Fatalf("the first process left no kept session: %+v", first.SessionRef)
	}

	// A new process: a new executor over the same provider and store.
	got := map[string]map[string]any{}
	o := unpricedOptions(t, &supervise.KernelExecutor{Provider: prov, Store: st})
	o.RunDir, o.Resume = dir, true
	o.Brain = draftThenResume(t, got)
	res, err := supervise.Supervise(context.Background(), managerProfile(t, supervise.VerbSpawnWorker), "t", o)
	if err != nil {
		t.Fatal(err)
	}
	if !res.Resumed || got["resume"]["workerId"] != "run1:s2" {
		t.Fatalf("resumed %v, resume spawn %v", res.Resumed, got["resume"])
	}
	second := settledByNode(t, dir)["run1:s2"]
	if second.State != supervise.StateDone || second.Session != first.Session {
		t.Errorf("resumed worker settled %s (%s) in session %q, want done in %q", second.State, second.Reason, second.Session, first.Session)
	}
	if c := prov.Counters(); prov.Creates() != 1 || c.NativeContinuations != 1 {
		t.Errorf("provider saw %d creates and %d native continuations, want 1 and 1", prov.Creates(), c.NativeContinuations)
	}
	if envAlive(t, prov, first.SessionRef.Run.EnvironmentID) {
		t.Error("the re-acquired environment outlived the resumed run")
	}
}

// After a restart whose kept environment is gone, the resume spawn is
// refused with a typed reason (resume-environment-gone) and nothing
// spent: it never runs fresh in the session's place.
func TestKernelExecutorResumeRefusedWhenTheEnvironmentIsGone(t *testing.T) {
	prov := echoProvider(t)
	st := memory.New(nil)
	dir := t.TempDir()
	runDiedBeforeRelease(t, prov, st, dir, draftBrain(t))
	ref := settledByNode(t, dir)["run1:s1"].SessionRef
	if ref == nil {
		t.Fatal("no session ref journaled")
	}
	env, err := prov.Get(context.Background(), ref.Run.EnvironmentID)
	if err != nil || env == nil {
		t.Fatalf("lookup: %v", err)
	}
	if err := env.Destroy(context.Background()); err != nil {
		t.Fatal(err)
	}
	creates, turns := prov.Creates(), prov.Turns()

	got := map[string]map[string]any{}
	o := unpricedOptions(t, &supervise.KernelExecutor{Provider: prov, Store: st})
	o.RunDir, o.Resume = dir, true
	o.Brain = draftThenResume(t, got)
	if _, err := supervise.Supervise(context.Background(), managerProfile(t, supervise.VerbSpawnWorker), "t", o); err != nil {
		t.Fatal(err)
	}
	second := settledByNode(t, dir)["run1:s2"]
	if second.State != supervise.StateFailed || !strings.Contains(second.Reason, supervise.ResumeEnvironmentGone) {
		t.Errorf("resume worker settled %s (%q), want failed naming %s", second.State, second.Reason, supervise.ResumeEnvironmentGone)
	}
	if s := second.Spent; s == nil || s.Tokens == nil || *s.Tokens != 0 || s.Iterations == nil || *s.Iterations != 0 {
		t.Errorf("the refused resume spent %+v, want nothing", s)
	}
	if prov.Creates() != creates || prov.Turns() != turns {
		t.Errorf("the refused resume dispatched: creates %d→%d, turns %d→%d", creates, prov.Creates(), turns, prov.Turns())
	}
}

// §3.6 ("only a backend that can honour resume"), §15 behaviour 20 (a
// provider without session support is rejected up front): on a provider
// that declares no native continuation KernelExecutor does not claim to
// resume, so a resume spawn is refused preflight with its reason —
// nothing admitted, nothing dispatched — and the settled worker's
// environment is not kept past its settlement.
func TestKernelExecutorRefusesResumeWithoutNativeContinuation(t *testing.T) {
	prov := echoProvider(t)
	exec := &supervise.KernelExecutor{Provider: withoutNative{prov}, Store: memory.New(nil)}
	if exec.ResumesSessions() {
		t.Fatal("KernelExecutor claims to resume on a provider without native continuation")
	}
	got := map[string]map[string]any{}
	o := unpricedOptions(t, exec)
	o.RunDir = t.TempDir()
	o.Brain = draftThenResume(t, got)
	if _, err := supervise.Supervise(context.Background(), managerProfile(t, supervise.VerbSpawnWorker), "t", o); err != nil {
		t.Fatal(err)
	}
	if got["resume"]["error"] != "preflight-refused" || got["resume"]["workerId"] != nil {
		t.Errorf("resume spawn: %v, want preflight-refused", got["resume"])
	}
	if prov.Creates() != 1 || prov.Turns() != 1 || prov.Counters().NativeContinuations != 0 {
		t.Errorf("provider saw %d creates, %d turns, %d continuations; want only the fresh worker's", prov.Creates(), prov.Turns(), prov.Counters().NativeContinuations)
	}
	first := settledByNode(t, o.RunDir)["run1:s1"]
	if first.SessionRef != nil {
		t.Errorf("a session that cannot be resumed was journaled as resumable: %+v", first.SessionRef)
	}
}

// A resume worker handed straight to KernelExecutor whose prior worker
// left no session is refused with a *ResumeRefusedError
// (resume-no-session) and spends nothing.
func TestKernelExecutorResumeWithoutSessionIsRefused(t *testing.T) {
	prov := echoProvider(t)
	exec := &supervise.KernelExecutor{Provider: prov, Store: memory.New(nil)}
	out, err := exec.Execute(context.Background(), supervise.Work{RunID: "r", Node: "r:s2", ResumeOf: "r:s1",
		Profile: mustProfile(t, writerProfile), Task: "revise"})
	var rr *supervise.ResumeRefusedError
	if !errors.As(err, &rr) || rr.Reason != supervise.ResumeNoSession || rr.Of != "r:s1" {
		t.Fatalf("resume without a session: %v, want a resume-no-session refusal", err)
	}
	if out.Spent.Tokens == nil || *out.Spent.Tokens != 0 || prov.Creates() != 0 || prov.Turns() != 0 {
		t.Errorf("the refusal spent %+v, creates %d, turns %d", out.Spent, prov.Creates(), prov.Turns())
	}
}

// destroyFails is a provider whose environments cannot be destroyed.
type destroyFails struct{ *scripted.Provider }

func (p destroyFails) Create(ctx context.Context, in *contract.CreateInput) (contract.Environment, error) {
	env, err := p.Provider.Create(ctx, in)
	if err != nil {
		return nil, err
	}
	return undestroyable{env}, nil
}

// undestroyable is an environment whose Destroy fails; it still opens
// its sessions and hands its owner the native session observation.
type undestroyable struct{ contract.Environment }

func (undestroyable) Destroy(context.Context) error { return errors.New("the box did not answer") }

func (e undestroyable) Session(ctx context.Context, id string, ref *contract.RunControlRef) (contract.Session, error) {
	return e.Environment.(contract.SessionOpener).Session(ctx, id, ref)
}

func (e undestroyable) StreamOwned(ctx context.Context, in *contract.TurnInput) iter.Seq2[contract.EnvironmentEvent, error] {
	return e.Environment.(contract.OwnedStreamer).StreamOwned(ctx, in)
}

// §15 behaviour 51 for a kept session: the environment a settled worker
// left for a resume is released at run end; a destroy that fails there
// names the worker in the result's TeardownUnconfirmed and is journaled
// teardown-unconfirmed.
func TestKeptSessionTeardownUnconfirmedAtRunEnd(t *testing.T) {
	prov := echoProvider(t)
	exec := &supervise.KernelExecutor{Provider: destroyFails{prov}, Store: memory.New(nil)}
	o := unpricedOptions(t, exec)
	o.RunDir = t.TempDir()
	o.Brain = supervise.BrainFunc(func(ctx context.Context, c *supervise.Coordinator, _ string) (supervise.BrainReport, error) {
		tool(t, ctx, c, supervise.VerbSpawnWorker, map[string]any{"profile": "writer", "task": "draft"})
		tool(t, ctx, c, supervise.VerbAwaitEvent, map[string]any{"timeoutMs": 60000})
		return supervise.BrainReport{}, nil
	})
	res, err := supervise.Supervise(context.Background(), managerProfile(t, supervise.VerbSpawnWorker), "t", o)
	if err != nil {
		t.Fatal(err)
	}
	if settledByNode(t, o.RunDir)["run1:s1"].SessionRef == nil {
		t.Fatal("the worker's session was not kept for a resume")
	}
	if len(res.TeardownUnconfirmed) != 1 || res.TeardownUnconfirmed[0].ID != "run1:s1" ||
		!strings.Contains(res.TeardownUnconfirmed[0].Detail, "did not answer") {
		t.Fatalf("teardown unconfirmed = %+v, want run1:s1's failed destroy", res.TeardownUnconfirmed)
	}
	recs, _, err := supervise.ReadRunDir(context.Background(), o.RunDir)
	if err != nil {
		t.Fatal(err)
	}
	journaled := false
	for _, r := range recs {
		journaled = journaled || (r.Kind == supervise.KindTeardownUnconfirmed && r.Node == "run1:s1")
	}
	if !journaled {
		t.Error("the unconfirmed teardown was not journaled")
	}
}

// A process that died before its run ended left its settled worker's
// kept environment with the provider; the process resuming the run
// releases it at run end from the journaled SessionRef (the runtime
// created it, ENV-06), even when no resume spawn took it over.
func TestKeptSessionOfADeadProcessIsReleasedAtRunEnd(t *testing.T) {
	prov := echoProvider(t)
	st := memory.New(nil)
	dir := t.TempDir()
	draft := draftBrain(t)
	runDiedBeforeRelease(t, prov, st, dir, draft)
	ref := settledByNode(t, dir)["run1:s1"].SessionRef
	if ref == nil || !ref.EnvironmentCreated || !envAlive(t, prov, ref.Run.EnvironmentID) {
		t.Fatalf("the dead process left no kept environment it created: %+v", ref)
	}
	o := unpricedOptions(t, &supervise.KernelExecutor{Provider: prov, Store: st})
	o.RunDir, o.Resume, o.Brain = dir, true, draft
	res, err := supervise.Supervise(context.Background(), managerProfile(t, supervise.VerbSpawnWorker), "t", o)
	if err != nil || !res.Resumed {
		t.Fatalf("resumed %v: %v", res.Resumed, err)
	}
	if envAlive(t, prov, ref.Run.EnvironmentID) {
		t.Error("the environment the dead process kept outlived the resumed run")
	}
	if prov.Creates() != 1 {
		t.Errorf("creates = %d, want the first worker's only", prov.Creates())
	}
}

// A resume of a resume goes on in the same session: each resume worker
// keeps what it took over for the next (one create, two native
// continuations, one native session throughout).
func TestKernelExecutorResumeChain(t *testing.T) {
	prov := echoProvider(t)
	o := unpricedOptions(t, &supervise.KernelExecutor{Provider: prov, Store: memory.New(nil)})
	o.RunDir = t.TempDir()
	o.Brain = supervise.BrainFunc(func(ctx context.Context, c *supervise.Coordinator, _ string) (supervise.BrainReport, error) {
		for _, continuity := range []string{"fresh", "resume", "resume"} {
			tool(t, ctx, c, supervise.VerbSpawnWorker, map[string]any{"profile": "writer", "task": "step", "continuity": continuity})
			tool(t, ctx, c, supervise.VerbAwaitEvent, map[string]any{"timeoutMs": 60000})
		}
		return supervise.BrainReport{}, nil
	})
	if _, err := supervise.Supervise(context.Background(), managerProfile(t, supervise.VerbSpawnWorker), "t", o); err != nil {
		t.Fatal(err)
	}
	settled := settledByNode(t, o.RunDir)
	session := settled["run1:s1"].Session
	for _, node := range []supervise.NodeID{"run1:s1", "run1:s2", "run1:s3"} {
		if r := settled[node]; r.State != supervise.StateDone || r.Session == "" || r.Session != session {
			t.Errorf("%s settled %s (%s) in session %q, want done in %q", node, r.State, r.Reason, r.Session, session)
		}
	}
	if c := prov.Counters(); prov.Creates() != 1 || c.NativeContinuations != 2 {
		t.Errorf("provider saw %d creates and %d native continuations, want 1 and 2", prov.Creates(), c.NativeContinuations)
	}
}

// BenchmarkKernelExecutorResume: a fresh worker, then a resume worker
// continuing its session, then the run-end release, through
// KernelExecutor on the scripted provider.
func BenchmarkKernelExecutorResume(b *testing.B) {
	var script scripted.Script
	if err := json.Unmarshal([]byte(`{"turns": [{"repeat": true, "steps": [{"text": "re: {{prompt}}"}]}]}`), &script); err != nil {
		b.Fatal(err)
	}
	prov := scripted.New(&script, scripted.Options{})
	exec := &supervise.KernelExecutor{Provider: prov, Store: memory.New(nil)}
	prof, err := profile.Parse([]byte(writerProfile))
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		run := fmt.Sprintf("run%d", i)
		first, err := exec.Execute(ctx, supervise.Work{RunID: run, Node: supervise.NodeID(run + ":s1"), Profile: prof, Task: "draft"})
		if err != nil || first.SessionRef == nil {
			b.Fatalf("fresh worker: %v (ref %v)", err, first.SessionRef)
		}
		if _, err := exec.Execute(ctx, supervise.Work{RunID: run, Node: supervise.NodeID(run + ":s2"), ResumeOf: supervise.NodeID(run + ":s1"),
			ResumeSession: first.Session, ResumeRef: first.SessionRef, Profile: prof, Task: "revise"}); err != nil {
			b.Fatal(err)
		}
		if u := exec.ReleaseSessions(ctx, run, nil); len(u) != 0 {
			b.Fatal(u)
		}
	}
}

// §3.6 "release journals one environment-teardown{provider,
// environmentId, destroyed, detail?} per environment", for the
// environment a settled worker kept for a resume: released at run end,
// it is journaled environment-teardown — destroyed true when the
// provider confirmed it, false with the reason (and teardown-unconfirmed
// beside it) when not.
func TestKeptSessionReleaseIsJournaledAtRunEnd(t *testing.T) {
	for _, fail := range []bool{false, true} {
		t.Run(map[bool]string{false: "destroyed", true: "destroy failed"}[fail], func(t *testing.T) {
			prov := echoProvider(t)
			var p contract.Provider = prov
			if fail {
				p = destroyFails{prov}
			}
			exec := &supervise.KernelExecutor{Provider: p, Store: memory.New(nil)}
			o := unpricedOptions(t, exec)
			o.RunDir = t.TempDir()
			o.Brain = supervise.BrainFunc(func(ctx context.Context, c *supervise.Coordinator, _ string) (supervise.BrainReport, error) {
				tool(t, ctx, c, supervise.VerbSpawnWorker, map[string]any{"profile": "writer", "task": "draft"})
				tool(t, ctx, c, supervise.VerbAwaitEvent, map[string]any{"timeoutMs": 60000})
				return supervise.BrainReport{}, nil
			})
			if _, err := supervise.Supervise(context.Background(), managerProfile(t, supervise.VerbSpawnWorker), "t", o); err != nil {
				t.Fatal(err)
			}
			ref := settledByNode(t, o.RunDir)["run1:s1"].SessionRef
			if ref == nil {
				t.Fatal("the worker's session was not kept for a resume")
			}
			recs, _, err := supervise.ReadRunDir(context.Background(), o.RunDir)
			if err != nil {
				t.Fatal(err)
			}
			var got []supervise.Record
			for _, r := range recs {
				if r.Kind == supervise.KindEnvironmentTeardown {
					got = append(got, r)
				}
			}
			if len(got) != 1 {
				t.Fatalf("%d environment-teardown records, want the kept environment's one: %+v", len(got), got)
			}
			r := got[0]
			if r.Node != "run1:s1" || r.Provider != p.Name() || r.EnvironmentID != ref.Run.EnvironmentID || r.Destroyed == nil || *r.Destroyed == fail ||
				(r.Reason != "") != fail {
				t.Errorf("record %+v; want run1:s1's environment %s on %s, destroyed %v", r, ref.Run.EnvironmentID, p.Name(), !fail)
			}
		})
	}
}
