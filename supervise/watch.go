package supervise

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/contract"
	"github.com/agentrt/agentrt/kernel"
)

// Online worker watching (§3.6 watchWorkers): a panel of detectors folds
// each live worker's tool calls as they end, so the manager learns a
// worker is looping mid-run, from a finding its await_event returns,
// instead of at its settlement.

// DefaultMaxFindingsPerWorker is WatchWorkers.MaxFindingsPerWorker's
// default: one pathological worker cannot flood its manager's events
// with the same signal on every call.
const DefaultMaxFindingsPerWorker = 3

// OnlineLensPrefix starts the Lens of an online finding: "online:"
// followed by its detector's kind ("online:repeated-action"), as the
// reference names the analyst of a detector's finding.
const OnlineLensPrefix = "online:"

// Kinds of the built-in detectors (the reference's detector ids).
const (
	// DetectorRepeatedAction is the stuck-loop detector (StuckLoop).
	DetectorRepeatedAction = "repeated-action"
	// DetectorErrorStreak is the error-streak detector (ErrorStreak).
	DetectorErrorStreak = "error-streak"
)

// DetectorTimeout bounds one Observe call of a caller's detector: one
// that has not answered by then, like one that panics, is disabled for
// that worker (and logged). The built-in detectors are not bounded:
// they never block.
const DetectorTimeout = time.Second

// maxSpanError bounds ToolSpan.Error, in bytes; maxWatchedParts bounds
// how many tool parts of one worker's current turn are remembered.
const (
	maxSpanError    = 200
	maxWatchedParts = 4096
)

// WatchWorkers is Options.WatchWorkers: the online detector panel run
// over every worker a manager spawns (analysts and nested managers are
// not watched). A worker whose executor reports no tool calls — one that
// does not pass Work.Observer on, or whose environment streams no tool
// parts — is simply not watched; nothing fails. The settle-time analysts
// are unaffected.
type WatchWorkers struct {
	// Detectors is the panel; nil (or empty) is DefaultDetectors: the
	// stuck-loop and error-streak pair. Each worker gets its own
	// DetectorWatch of each (Detector.NewWatch).
	Detectors []Detector
	// MaxFindingsPerWorker caps the findings raised per worker: 0 is
	// DefaultMaxFindingsPerWorker, a negative value unlimited. The cap
	// counts what earlier processes of a resumed run raised.
	MaxFindingsPerWorker int
}

// SpanStatus is how a tool call ended, as far as its trace says.
type SpanStatus string

// Span statuses. SpanUnknown is a call whose end the trace did not
// report (an environment's tool part that never reached a terminal
// state before its turn ended).
const (
	SpanOK      SpanStatus = "ok"
	SpanError   SpanStatus = "error"
	SpanUnknown SpanStatus = ""
)

// ToolSpan is one ended tool call of a worker, as a detector sees it.
type ToolSpan struct {
	// Tool is the tool's name.
	Tool string `json:"toolName"`
	// ArgsDigest is the canonical digest of the call's arguments
	// ("sha256:…", canonjson.Digest), "" when they are unknown: the
	// stuck-loop fingerprint is Tool with ArgsDigest.
	ArgsDigest string     `json:"argsDigest,omitzero"`
	Status     SpanStatus `json:"status,omitzero"`
	// Error is, for an errored call, its error (at most 200 bytes).
	Error string `json:"error,omitzero"`
	// AtMS is when the run saw the call end, Unix milliseconds.
	AtMS int64 `json:"atMs"`
}

// Detection is what a detector raises over a worker's trace; the runtime
// raises it as a finding (its detector's Kind names it).
type Detection struct {
	// Severity is "warn" unless the detector says otherwise.
	Severity string `json:"severity"`
	// Summary says what was detected, in a sentence ("reason" on the
	// wire, as the reference spells it).
	Summary string `json:"reason"`
	// Streak is how many consecutive matching calls tripped it.
	Streak int `json:"streak"`
	// FailureClass classifies the failure ("tool_recovery_failure" for
	// both built-ins), "" when the detector names none.
	FailureClass string `json:"failureClass,omitzero"`
	// Evidence is what the detector cites (the built-ins: the tool).
	Evidence map[string]string `json:"evidence,omitzero"`
}

// Detector is one detector of a WatchWorkers panel. Kind names it (a
// finding's lens is OnlineLensPrefix+Kind); NewWatch starts watching one
// worker, with state of its own. A caller's detector is called from the
// worker's run, bounded by DetectorTimeout.
type Detector interface {
	Kind() string
	NewWatch() DetectorWatch
}

// DetectorWatch is a Detector watching one worker: Observe folds each of
// the worker's ended tool calls, in order, and reports a detection when
// one trips. Calls are never concurrent.
type DetectorWatch interface {
	Observe(span ToolSpan) (Detection, bool)
}

// DefaultDetectors is the default panel, the reference's: StuckLoop(3)
// and ErrorStreak(3).
func DefaultDetectors() []Detector {
	return []Detector{StuckLoop(3), ErrorStreak(3)}
}

// StuckLoop is the stuck-loop detector (kind DetectorRepeatedAction): it
// trips once the same call — the same tool with the same arguments —
// ends maxRepeated consecutive times, and again on every further repeat
// (the per-worker cap bounds the findings). maxRepeated <= 0 never
// trips.
func StuckLoop(maxRepeated int) Detector { return stuckLoop{max: maxRepeated} }

// ErrorStreak is the error-streak detector (kind DetectorErrorStreak):
// it trips once maxErrors consecutive calls ended in error, and again on
// every further one; a call that ended well resets it, a call whose end
// is unknown leaves it as it was. maxErrors <= 0 never trips.
func ErrorStreak(maxErrors int) Detector { return errorStreak{max: maxErrors} }

type stuckLoop struct{ max int }

func (stuckLoop) Kind() string              { return DetectorRepeatedAction }
func (d stuckLoop) NewWatch() DetectorWatch { return &stuckLoopWatch{max: d.max} }

type stuckLoopWatch struct {
	max    int
	last   string
	streak int
}

func (w *stuckLoopWatch) Observe(s ToolSpan) (Detection, bool) {
	fp := s.Tool + "|" + s.ArgsDigest
	if fp == w.last {
		w.streak++
	} else {
		w.last, w.streak = fp, 1
	}
	if w.max <= 0 || w.streak < w.max {
		return Detection{}, false
	}
	return Detection{Severity: "warn", FailureClass: "tool_recovery_failure", Streak: w.streak,
		Summary:  fmt.Sprintf("stuck: repeated same action for %d step(s)", w.streak),
		Evidence: map[string]string{"action": s.Tool}}, true
}

type errorStreak struct{ max int }

func (errorStreak) Kind() string              { return DetectorErrorStreak }
func (d errorStreak) NewWatch() DetectorWatch { return &errorStreakWatch{max: d.max} }

type errorStreakWatch struct{ max, streak int }

func (w *errorStreakWatch) Observe(s ToolSpan) (Detection, bool) {
	switch s.Status {
	case SpanUnknown:
		return Detection{}, false
	case SpanError:
		w.streak++
	default:
		w.streak = 0
	}
	if w.max <= 0 || w.streak < w.max {
		return Detection{}, false
	}
	return Detection{Severity: "warn", FailureClass: "tool_recovery_failure", Streak: w.streak,
		Summary:  fmt.Sprintf("stuck: %d consecutive errored step(s)", w.streak),
		Evidence: map[string]string{"lastError": s.Tool}}, true
}

// OnlineFinding is an online finding's payload: Event.Output (and the
// coordination log's FindingRecord.Findings) hold it as JSON.
type OnlineFinding struct {
	Detector string `json:"detector"`
	Detection
	ToolName string `json:"toolName"`
	AtMS     int64  `json:"at"`
}

// watchSlot is one detector of a worker's panel.
type watchSlot struct {
	kind     string
	watch    DetectorWatch
	builtin  bool
	disabled bool
}

// workerWatch is the panel watching one worker.
type workerWatch struct {
	c  *Coordinator
	id NodeID

	mu     sync.Mutex
	slots  []watchSlot
	raised int
	limit  int // <= 0: unlimited
	// open are the tool parts of the current turn not yet ended, by
	// part id in the order first seen; ended those that ended.
	open  map[string]ToolSpan
	order []string
	ended map[string]bool
}

// watchFor wraps inner so a panel watches worker id's tool calls; inner
// itself when the run watches no workers or id is not a spawned worker
// (an analyst, a nested manager). c.mu is not held.
func (c *Coordinator) watchFor(id NodeID, exec Executor, inner kernel.Observer) kernel.Observer {
	o := c.watch
	if o == nil {
		return inner
	}
	if _, ok := exec.(*nestedManager); ok {
		return inner
	}
	c.mu.Lock()
	_, isAnalyst := c.analysts[id]
	prior := c.watchRaised[id]
	c.mu.Unlock()
	if isAnalyst {
		return inner
	}
	dets := o.Detectors
	if len(dets) == 0 {
		dets = DefaultDetectors()
	}
	limit := o.MaxFindingsPerWorker
	if limit == 0 {
		limit = DefaultMaxFindingsPerWorker
	}
	w := &workerWatch{c: c, id: id, raised: prior, limit: limit, open: map[string]ToolSpan{}, ended: map[string]bool{}}
	for _, d := range dets {
		if d == nil {
			continue
		}
		slot, ok := c.newSlot(id, d)
		if ok {
			w.slots = append(w.slots, slot)
		}
	}
	return watchObserver{w: w, passObserver: passObserver{inner}}
}

// newSlot starts detector d on worker id; false when d panicked doing
// so (logged).
func (c *Coordinator) newSlot(id NodeID, d Detector) (s watchSlot, ok bool) {
	defer func() {
		if p := recover(); p != nil {
			c.logger.Warn("supervise: a worker detector panicked starting; not watching with it", "node", id, "panic", p)
			ok = false
		}
	}()
	switch d.(type) {
	case stuckLoop, errorStreak:
		s.builtin = true
	}
	s.kind, s.watch = d.Kind(), d.NewWatch()
	return s, s.watch != nil
}

// watchObserver feeds a worker's tool calls to its panel: the tool
// loop's ToolEnded, and an environment's tool parts in its event stream
// (a part counts once, when it reaches a terminal state, or — when it
// never does — as its turn ends, its end unknown).
type watchObserver struct {
	w *workerWatch
	passObserver
}

// Event implements kernel.Observer.
func (o watchObserver) Event(ctx context.Context, e contract.EnvironmentEvent) error {
	if n := e.Normalized; n != nil && n.MessagePartUpdated != nil && n.MessagePartUpdated.Part.IsTool() {
		o.w.part(ctx, n.MessagePartUpdated.Part)
	}
	return o.passObserver.Event(ctx, e)
}

// TurnEnded implements kernel.Observer.
func (o watchObserver) TurnEnded(ctx context.Context, t kernel.TurnEnd) error {
	o.w.flush(ctx)
	return o.passObserver.TurnEnded(ctx, t)
}

// ToolEnded implements kernel.ToolObserver.
func (o watchObserver) ToolEnded(ctx context.Context, c kernel.ToolCallEnd) error {
	s := ToolSpan{Tool: c.Call.Name, ArgsDigest: argsDigest(c.Call.Args), Status: SpanOK}
	if !c.Outcome.OK {
		s.Status, s.Error = SpanError, clipBytes(strings.TrimSpace(c.Outcome.Code+" "+c.Outcome.Message), maxSpanError)
	}
	o.w.mu.Lock()
	o.w.observeLocked(ctx, s)
	o.w.mu.Unlock()
	return o.passObserver.ToolEnded(ctx, c)
}

// argsDigest is v's canonical digest, "" when v is absent or cannot be
// digested.
func argsDigest(v canonjson.Value) string {
	if !v.IsValid() {
		return ""
	}
	d, err := canonjson.Digest(v)
	if err != nil {
		return ""
	}
	return d
}

// objectOf is m as a JSON object value (its canonical form orders the
// members).
func objectOf(m map[string]canonjson.Value) canonjson.Value {
	members := make([]canonjson.Member, 0, len(m))
	for k, v := range m {
		members = append(members, canonjson.Member{Name: k, Value: v})
	}
	return canonjson.ObjectValue(members)
}

// part notes one update of a tool part.
func (w *workerWatch) part(ctx context.Context, p contract.Part) {
	id := p.ID
	if id == "" && p.CallID != nil {
		id = *p.CallID
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if id == "" || w.ended[id] {
		return
	}
	s, seen := w.open[id]
	if !seen {
		if len(w.open) >= maxWatchedParts {
			return
		}
		if p.Tool != nil {
			s.Tool = *p.Tool
		}
		w.order = append(w.order, id)
	}
	if st := p.State; st != nil {
		if st.Input != nil && s.ArgsDigest == "" {
			s.ArgsDigest = argsDigest(objectOf(st.Input))
		}
		switch st.Status {
		case contract.ToolStatusCompleted:
			s.Status = SpanOK
		case contract.ToolStatusError, contract.ToolStatusFailed:
			s.Status = SpanError
			if st.Error != nil {
				s.Error = clipBytes(*st.Error, maxSpanError)
			}
		}
		if s.Status != SpanUnknown {
			delete(w.open, id)
			if len(w.ended) >= maxWatchedParts {
				clear(w.ended)
			}
			w.ended[id] = true
			w.observeLocked(ctx, s)
			return
		}
	}
	w.open[id] = s
}

// flush observes, as its turn ends, every tool part of it that never
// reported its end, in the order they were first seen.
func (w *workerWatch) flush(ctx context.Context) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, id := range w.order {
		if s, ok := w.open[id]; ok {
			w.observeLocked(ctx, s)
		}
	}
	clear(w.open)
	w.order = w.order[:0]
}

// observeLocked folds s through the panel and raises what trips; w.mu is
// held.
func (w *workerWatch) observeLocked(ctx context.Context, s ToolSpan) {
	s.AtMS = w.c.now().UnixMilli()
	for i := range w.slots {
		slot := &w.slots[i]
		if slot.disabled {
			continue
		}
		d, tripped := w.observeSlot(ctx, slot, s)
		if !tripped {
			continue
		}
		if w.limit > 0 && w.raised >= w.limit {
			continue
		}
		w.raised++
		w.c.raiseOnline(ctx, w.id, OnlineFinding{Detector: slot.kind, Detection: d, ToolName: s.Tool, AtMS: s.AtMS})
	}
}

// observeSlot calls one detector: a caller's through callHook, bounded by
// DetectorTimeout; one that panics or does not answer is disabled for
// the worker.
func (w *workerWatch) observeSlot(ctx context.Context, slot *watchSlot, s ToolSpan) (Detection, bool) {
	type answer struct {
		d  Detection
		ok bool
	}
	if slot.builtin {
		return slot.watch.Observe(s)
	}
	hctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), DetectorTimeout)
	defer cancel()
	a, answered := callHook(hctx, func(context.Context) (answer, error) {
		d, ok := slot.watch.Observe(s)
		return answer{d, ok}, nil
	})
	switch {
	case !answered:
		slot.disabled = true
		w.c.logger.Warn("supervise: a worker detector did not answer; disabled for the worker", "node", w.id, "detector", slot.kind, "timeout", DetectorTimeout)
		return Detection{}, false
	case a.panic != nil:
		slot.disabled = true
		w.c.logger.Warn("supervise: a worker detector panicked; disabled for the worker", "node", w.id, "detector", slot.kind, "panic", a.panic)
		return Detection{}, false
	}
	return a.v.d, a.v.ok
}

// raiseOnline journals an online finding about worker id in the
// coordination log, then queues it for the worker's manager's Await.
func (c *Coordinator) raiseOnline(ctx context.Context, id NodeID, f OnlineFinding) {
	if f.Severity == "" {
		f.Severity = "warn"
	}
	b, err := json.Marshal(f)
	if err != nil {
		c.logger.Error("supervise: encoding an online finding", "node", id, "err", err)
		return
	}
	lens := OnlineLensPrefix + f.Detector
	bg := context.WithoutCancel(ctx)
	rec := CoordRecord{Kind: CoordFinding, Finding: &FindingRecord{Outcome: FindingDetected, Lens: lens, Source: id, Findings: string(b)}}
	if err := c.log.appendCoordOrLose(bg, rec, id); err != nil {
		c.logger.Error("supervise: recording an online finding", "node", id, "err", err)
	}
	info, _ := c.scope.Node(id)
	box := c.viewFor(id)
	c.mu.Lock()
	defer c.mu.Unlock()
	box.pushLocked(Event{Kind: EventFinding, WorkerID: id, Label: labelOf(info.Label, info.Profile), State: info.State,
		Output: string(b), Lens: lens, Source: id})
}
