package supervise

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"

	"github.com/agentrt/agentrt/canonjson"

	"github.com/agentrt/agentrt/contract"
	"github.com/agentrt/agentrt/kernel"
	"github.com/agentrt/agentrt/profile"
	"github.com/agentrt/agentrt/tools"
	"github.com/google/jsonschema-go/jsonschema"
)

// ToolPrefix is the prefix under which a profile declares the
// coordination verbs (§9): agent_runtime_coordination_spawn_worker, ….
const ToolPrefix = "agent_runtime_coordination_"

// The coordination verbs this package serves.
const (
	VerbSpawnWorker    = "spawn_worker"
	VerbAwaitEvent     = "await_event"
	VerbObserveAgent   = "observe_agent"
	VerbSteerAgent     = "steer_agent"
	VerbSubmitResult   = "submit_result"
	VerbStop           = "stop"
	VerbReadJournal    = "read_journal"
	VerbAskParent      = "ask_parent"
	VerbListQuestions  = "list_questions"
	VerbAnswerQuestion = "answer_question"
)

// Verbs lists the coordination verbs in a stable order.
func Verbs() []string {
	return []string{VerbSpawnWorker, VerbAwaitEvent, VerbObserveAgent, VerbSteerAgent, VerbSubmitResult, VerbStop, VerbReadJournal,
		VerbAskParent, VerbListQuestions, VerbAnswerQuestion, VerbListAnalysts, VerbRunAnalyst, VerbDefineAnalyst}
}

// RefusalResult is a refused verb's tool result: {error, reason}, and
// for a spawn also cause, live and freeSlots; a preflight refusal also
// detail (§3.6 {error: preflight-refused, cause, detail}). Refusals are
// results the model reads, not transport errors.
type RefusalResult struct {
	Error     string `json:"error"`
	Reason    string `json:"reason"`
	Cause     string `json:"cause,omitzero"`
	Detail    string `json:"detail,omitzero"`
	Live      *int   `json:"live,omitzero"`
	FreeSlots *int   `json:"freeSlots,omitzero"`
	// Shortfall is a budget-exhausted spawn refusal's channel, request
	// and free amount (Refusal.Shortfall).
	Shortfall *Shortfall `json:"shortfall,omitzero"`
	// Hint is a usd-unbudgeted refusal's advice (Refusal.Hint).
	Hint string `json:"hint,omitzero"`
}

// MarshalJSON writes a spawn refusal (one that carries live) with
// freeSlots always present, null when the scope is uncapped (§3.6:
// every spawn reply carries live and freeSlots); other refusals carry
// neither.
func (r RefusalResult) MarshalJSON() ([]byte, error) {
	type plain RefusalResult
	if r.Live == nil {
		return json.Marshal(plain(r))
	}
	return json.Marshal(struct {
		plain
		FreeSlots *int `json:"freeSlots"`
	}{plain(r), r.FreeSlots})
}

// refusalOf turns a verb's typed refusal into its tool result, its
// reason and detail clipped to MaxReasonBytes (a refusal may quote the
// refused argument, which the model may have sent 2 MiB long); any other
// error stays an error (a tool failure).
func refusalOf(err error) (RefusalResult, bool) {
	r, ok := refusalResult(err)
	r.Reason, r.Detail = clip(r.Reason, MaxReasonBytes), clip(r.Detail, MaxReasonBytes)
	return r, ok
}

func refusalResult(err error) (RefusalResult, bool) {
	var r *Refusal
	if errors.As(err, &r) {
		live := r.Live
		reason := r.Detail
		if reason == "" {
			reason = r.Cause
		}
		res := RefusalResult{Error: string(r.Code), Reason: reason, Cause: r.Cause, Live: &live, FreeSlots: r.FreeSlots,
			Shortfall: r.Shortfall, Hint: r.Hint}
		if r.Code == CodePreflightRefused {
			res.Detail = r.Detail
			if res.Detail == "" {
				res.Detail = r.Cause
			}
		}
		return res, true
	}
	var v *VerbRefusal
	if errors.As(err, &v) {
		return RefusalResult{Error: v.Code, Reason: v.Reason}, true
	}
	if errors.Is(err, ErrUnknownWorker) {
		return RefusalResult{Error: "unknown-worker", Reason: err.Error()}, true
	}
	var l *LensError
	if errors.As(err, &l) {
		return RefusalResult{Error: "invalid-definition", Reason: l.issueText()}, true
	}
	return RefusalResult{}, false
}

// NewVerb makes the coordination tool ToolPrefix+name from fn, typed as
// tools.NewTool does: a typed refusal fn returns (a *Refusal, a
// *VerbRefusal, ErrUnknownWorker, a *LensError) becomes its tool result
// RefusalResult, never a tool failure. Package graph builds its verbs
// with it; opts are tools.NewTool's (an input schema of its own).
func NewVerb[In, Out any](name, desc string, fn func(ctx context.Context, in In) (Out, error), opts ...tools.ToolOption) (contract.Tool, error) {
	return verb(name, desc, fn, opts...)
}

func verb[In, Out any](name, desc string, fn func(ctx context.Context, in In) (Out, error), opts ...tools.ToolOption) (contract.Tool, error) {
	return tools.NewTool(ToolPrefix+name, desc, func(ctx context.Context, in In) (any, error) {
		out, err := fn(ctx, in)
		if err != nil {
			if r, ok := refusalOf(err); ok {
				return r, nil
			}
			return nil, err
		}
		return out, nil
	}, opts...)
}

// spawnSchema is spawn_worker's input schema: SpawnArgs's, with profile
// a name or, when authored profiles are accepted, an AgentProfile
// object (validated strictly by Spawn, which reports the member's
// pointer).
func (c *Coordinator) spawnSchema() (*jsonschema.Schema, error) { return SpawnArgsSchema() }

// SpawnArgsSchema is spawn_worker's input schema: SpawnArgs, its
// profile a name (string) or an authored AgentProfile (object).
func SpawnArgsSchema() (*jsonschema.Schema, error) {
	s, err := jsonschema.For[SpawnArgs](nil)
	if err != nil {
		return nil, err
	}
	if ps := s.Properties["profile"]; ps != nil {
		ps.Type, ps.Types = "", []string{"string", "object"}
	}
	return s, nil
}

// steerFromManager is steer_agent as the manager calls it. A steer to
// the manager itself (its own node; for the root also the run id) is
// refused self-steer: a manager's inbox is taken between its turns or
// with its next tool result, and this call holds both, so the steer
// could only wait out MaxSteerWait. Steers to the root from outside the
// brain (agentrt steer RUN RUN-ID, Coordinator.Steer) are unaffected.
func (c *Coordinator) steerFromManager(ctx context.Context, a SteerArgs) (SteerResult, error) {
	if a.WorkerID == c.self || c.parent == nil && (a.WorkerID == NodeID(c.runID) || a.WorkerID == c.scope.Root()) {
		return SteerResult{}, &VerbRefusal{Code: "self-steer", Reason: "a manager cannot steer itself: say it in its own next turn; steer one of its workers instead"}
	}
	return c.Steer(ctx, a)
}

// Tools returns the coordination verbs as tools named with ToolPrefix,
// in Verbs order: what the router brain offers its model, and what an
// MCP server would list to an external harness.
func (c *Coordinator) Tools() ([]contract.Tool, error) {
	var out []contract.Tool
	var errs []error
	add := func(t contract.Tool, err error) {
		if err != nil {
			errs = append(errs, err)
			return
		}
		out = append(out, t)
	}
	spawnDesc := "Spawn a worker running a named profile on a task, reserved from the run's budget. Returns workerId, live and freeSlots, or {error, reason} when refused."
	if c.authoredOK {
		spawnDesc = c.authoringGuide()
	}
	if ss, err := c.spawnSchema(); err != nil {
		errs = append(errs, err)
	} else {
		add(verb(VerbSpawnWorker, spawnDesc, c.Spawn, tools.WithInputSchema(ss)))
	}
	add(verb(VerbAwaitEvent, "Wait for the next worker settlement (in recorded order): returns {event}, {idle:true} when nothing is live, {pending:true, live} after the bounded wait (both, when kinds were named, with queued: the other kinds' events still waiting, by kind), or {stopped:true, reason, live} at once once the run is settling (stop, cancel, deadline); idle, pending and stopped name workers lost in doubt (inDoubt: started before a restart, never settled; observe_agent says why).", c.Await))
	add(verb(VerbObserveAgent, "Observe a worker: status, reserved and spent budget, progress (idleMs, stalled, turns, recentActivity, profileChanges, steerable, pendingMessages) and once settled its output and verdict. The output comes in pages of at most 16000 bytes: outputPath (a JSON pointer into {text, output}, default /text), offset and limit choose one; outputBytes is the whole length and nextOffset, when present, the next page's offset.", c.ObservePage))
	add(verb(VerbSteerAgent, "Send an instruction to a live worker's inbox.", c.steerFromManager))
	add(verb(VerbSubmitResult, "Submit the run's final result to the deliverable check; the first passing result is kept.", c.Submit))
	add(verb(VerbStop, "Stop the run: nothing more is spawned and the manager's loop ends.", func(_ context.Context, a StopArgs) (StopResult, error) { return c.Stop(a) }))
	add(verb(VerbReadJournal, "Read this run's journal (prior processes included), paged from sinceRow: at most limit rows (200) and maxBytes bytes of JSON (65536 by default, at most 262144); a row too large for any page is named in oversize and skipped.", func(_ context.Context, a JournalArgs) (JournalPage, error) {
		if a.MaxBytes <= 0 {
			a.MaxBytes = DefaultJournalPageBytes
		}
		if err := c.checkJournalArgs(a); err != nil {
			return JournalPage{}, err
		}
		return c.ReadJournal(a), nil
	}))
	add(verb(VerbAskParent, "Ask this manager's parent a question {from, level, question, reason, urgency, options?: [{label, tradeoff}]}. Read its status: queued-for-parent means a parent now holds the question and its answer will reach you; no-parent means nothing will route an answer back, so decide it yourself and do not wait.", c.AskParent,
		tools.WithInference(&jsonschema.ForOptions{TypeSchemas: map[reflect.Type]*jsonschema.Schema{reflect.TypeFor[QuestionOption](): questionOptionSchema()}})))
	add(verb(VerbListQuestions, "List the questions workers asked this manager, with their status, in the order asked, a page at a time: limit questions (default 50, at most 100) from cursor (the previous page's nextCursor); more says whether questions remain.", func(_ context.Context, a ListQuestionsArgs) (QuestionList, error) {
		return c.ListQuestionsPage(a)
	}))
	add(verb(VerbAnswerQuestion, "Decide a question: answer, deferReason or escalateTo (parent|user). A decision resolves the question only when delivered to its asker.", c.AnswerQuestion))
	add(verb(VerbListAnalysts, "List the analyst lenses on the menu: the only lenses run_analyst runs.", func(context.Context, struct{}) (AnalystList, error) {
		return c.ListAnalysts(), nil
	}))
	add(verb(VerbRunAnalyst, "Run an analyst lens (kind, from list_analysts) over a settled worker; its findings arrive from await_event as a finding event. Charged to the run's budget like any worker.", c.RunAnalyst))
	add(verb(VerbDefineAnalyst, "Define an analyst lens as data: id, description, area, question, instructions, toolGroup, and optional model, limits {maxIterations, maxLlmCalls, maxToolCalls, maxOutputChars} and minimumEvidenceCitations. Text past its bound is refused (invalid-definition, naming every issue); a limit past its bound is clamped and the reply says what was accepted; at most 8 per manager (max-defined-analysts); an id already on the menu is refused (duplicate-analyst).", c.DefineAnalyst))
	for i := range out {
		if c.parent == nil { // a nested manager's calls are in its worker log
			out[i] = c.streamed(out[i])
		}
	}
	return out, errors.Join(errs...)
}

// streamedCallKey marks a tool call's context whose call the root
// stream already records (the router brain's, through TurnMeter).
type streamedCallKey struct{}

// streamed records each call of verb t in the root stream, with its
// arguments and how it ended, unless the call's context says the brain's
// own observer records it: so a manager that calls the verbs over MCP
// (an external harness) has its coordination calls in root-stream.jsonl
// too. Without a run dir t is returned as is.
func (c *Coordinator) streamed(t contract.Tool) contract.Tool {
	s := c.log.streams
	if s == nil || t.Run == nil {
		return t
	}
	run := t.Run
	t.Run = func(ctx context.Context, args canonjson.Value) (canonjson.Value, error) {
		if ctx.Value(streamedCallKey{}) != nil {
			return run(ctx, args)
		}
		text := ""
		if args.IsValid() {
			if b, err := canonjson.Canonical(args); err == nil {
				text = string(b)
			}
		}
		s.add("", StreamRecord{Kind: StreamToolStarted, Tool: t.Name}.withText(text))
		v, err := run(ctx, args)
		end := StreamRecord{Kind: StreamToolEnded, Tool: t.Name, OK: new(err == nil)}
		if err != nil {
			end.Code = "failed"
			end = end.withText(err.Error())
		}
		s.add("", end)
		return v, err
	}
	return t
}

// RouterBrain is the manager's brain for harness cli-base: an
// in-process tool loop (kernel.RunToolLoop) of the manager's profile on a
// chat model, whose tools are the coordination verbs the profile
// declares (ToolPrefix + verb).
type RouterBrain struct {
	profile  *profile.Profile
	model    contract.ChatModel
	maxTurns int
	granted  []string
}

// NewRouterBrain checks that manager declares only coordination verbs
// this package serves (at least one) and returns its router brain.
func NewRouterBrain(manager *profile.Profile, model contract.ChatModel, maxTurns int) (*RouterBrain, error) {
	b := &RouterBrain{profile: manager, model: model, maxTurns: maxTurns}
	var bad []string
	for name, on := range manager.Tools {
		if !on {
			continue
		}
		v, ok := strings.CutPrefix(name, ToolPrefix)
		if !ok || !slices.Contains(Verbs(), v) {
			bad = append(bad, name)
			continue
		}
		b.granted = append(b.granted, name)
	}
	slices.Sort(bad)
	slices.Sort(b.granted)
	switch {
	case len(bad) > 0:
		return nil, fmt.Errorf("%w: the manager profile declares tools the router brain does not serve: %s", ErrInvalidOptions, strings.Join(bad, ", "))
	case len(b.granted) == 0:
		return nil, fmt.Errorf("%w: the manager profile grants no coordination verb (declare %s%s)", ErrInvalidOptions, ToolPrefix, VerbSpawnWorker)
	}
	return b, nil
}

// Drive runs the manager's tool loop on task. Its conversation is
// journaled turn by turn (KindTranscript, under the manager's node); a
// resumed run's Drive goes on from the journaled transcript, the task
// not added again, and a manager whose journaling fails stops.
func (b *RouterBrain) Drive(ctx context.Context, c *Coordinator, task string) (BrainReport, error) {
	all, err := c.Tools()
	if err != nil {
		return BrainReport{}, err
	}
	return b.DriveTools(ctx, c, task, all)
}

// DriveTools is Drive over tools in place of c.Tools(): a layer over
// supervise whose verbs wrap the coordinator's (graph's node-pinned
// spawn_worker, its await_event that names findings) drives its root
// with them, journaled and resumed as Drive is. Each tool keeps its
// verb's name (ToolPrefix + verb); the manager is offered those its
// profile grants, and besides them the root's ExtraTools and its own
// product tools (NodeTools).
func (b *RouterBrain) DriveTools(ctx context.Context, c *Coordinator, task string, all []contract.Tool) (BrainReport, error) {
	// The conversation is journaled as it goes (KindTranscript), and a
	// resumed run goes on from what earlier processes journaled, its
	// queue without the events the conversation already has.
	recorded, took, _, err := c.recordedTranscript()
	if err != nil {
		return BrainReport{}, err
	}
	c.dropTaken(took)
	c.setRerunCalls(recorded)
	journal := &transcriptJournal{c: c, inbox: c.ManagerInbox()}
	// Steers the loop took that no checkpoint journaled go back.
	defer journal.releaseHeld(ctx)
	// So do events an await_event took whose result was not recorded.
	defer journal.release()
	var offered []contract.Tool
	for _, t := range all {
		if slices.Contains(b.granted, t.Name) {
			switch t.Name {
			case ToolPrefix + VerbAwaitEvent:
				t = journal.awaiting(t)
			case ToolPrefix + VerbAskParent:
				t = journal.asking(t)
			}
			offered = append(offered, t)
		}
	}
	// Each model turn is charged to the run's pool as it ends, and
	// journaled with what it said (meterTurn); a turn no checkpoint
	// journaled gets its own metered record once the loop ended.
	// Steers addressed to the run's root join between its turns.
	manager := b.profile
	if c.parent == nil {
		// The root manager's extra tools (Options.ExtraTools), journaled
		// call by call.
		m, extra, err := c.withExtraTools(manager)
		if err != nil {
			return BrainReport{}, err
		}
		manager, offered = m, append(offered, extra...)
	}
	// The manager's own product tools (Options.ResolveSupervisorTools),
	// resolved once for its node and journaled call by call; a manager
	// whose tools cannot be resolved does not start its loop.
	own, err := c.NodeTools(ctx, task)
	if err != nil {
		return BrainReport{}, err
	}
	if manager, err = declareTools(manager, own); err != nil {
		return BrainReport{}, err
	}
	offered = append(offered, own...)
	opts := kernel.ToolLoopOptions{Model: b.model, Profile: manager, User: task, Tools: offered,
		MaxToolTurns: b.maxTurns, Logger: c.logger, Now: c.now, Observer: c.turnMeter(journal), Interject: journal.interjector(),
		Checkpoint: journal.checkpoint, Recorded: recorded,
		// Awaiting again is waiting, not a loop: each await may return
		// another event, so only repeated outcomes make it stuck.
		Waiting: []string{ToolPrefix + VerbAwaitEvent}}
	if c.parent == nil && c.progress.rule != nil {
		// The run's no-progress bound is read before each model turn
		// after the first, as the reference's router driver reads it
		// (Options.StopRule): a rule that stops the run stops the loop
		// before the turn's model call, its steers left untaken.
		inner := opts.Interject
		opts.Interject = func(ctx context.Context, answered bool) []string {
			if !answered {
				c.checkProgress(ctx)
				if c.progressStopped() {
					return nil
				}
			}
			if inner == nil {
				return nil
			}
			return inner(ctx, answered)
		}
	}
	if c.parent != nil {
		// A nested manager's turns are held to its node's reservation.
		gate, reserve, err := c.turnGate()
		if err != nil {
			return BrainReport{}, err
		}
		opts.Budget, opts.Reserve = gate, reserve
	}
	res, err := kernel.RunToolLoop(ctx, opts)
	if ferr := journal.flushTurn(ctx); ferr != nil {
		// A loss the run's result reports (appendOrLose).
		c.logger.Error("supervise: journaling the manager's last turn", "node", c.self, "err", ferr)
	}
	if res == nil {
		return BrainReport{}, err
	}
	report := BrainReport{Text: res.FinalText}
	if err == nil && (res.StopReason == kernel.StopBudget || res.StopReason == kernel.StopDeadline) {
		err = fmt.Errorf("%w (%s)", ErrBudgetStop, res.StopReason)
	}
	return report, err
}
