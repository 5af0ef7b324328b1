package supervise

import (
	"context"
	"sync"
	"time"

	"github.com/agentrt/agentrt/contract"
	"github.com/agentrt/agentrt/kernel"
	"github.com/agentrt/agentrt/profile"
)

// Progress bounds (§9 observe_agent's progress block).
const (
	// StallAfter is how long a live worker may go without activity (a
	// turn started or ended, an event streamed) before its progress
	// reads stalled, unless Options.StallAfter sets another (§3.6
	// stallAfterMs: "Omit = runtime default").
	StallAfter = 2 * time.Minute
	// MaxRecentActivity is how many recent activity entries progress
	// keeps per worker; MaxActivityText bounds each entry's text, in
	// bytes.
	MaxRecentActivity = 8
	MaxActivityText   = 200
)

// Activity kinds of WorkerProgress.RecentActivity.
const (
	ActivityStarted     = "started"
	ActivityTurnStarted = "turn-started"
	ActivityText        = "text"
	ActivityEvent       = "event"
	ActivityTurnEnded   = "turn-ended"
)

// Activity is one recent thing a worker did: Kind (an ActivityXxx), when
// (AtMS, Unix milliseconds) and, for text, what it streamed (consecutive
// text deltas merged, at most MaxActivityText bytes), for an event its
// type, for a turn's end its terminal.
type Activity struct {
	Kind string `json:"kind"`
	AtMS int64  `json:"atMs"`
	Text string `json:"text,omitzero"`
}

// ProfileChange is a difference the run observed between what the
// worker's profile asked and what ran: Field "model" when a turn
// requested another model than the profile's default (the effective
// profile's), "servedModel" when the platform served another model than
// the one requested.
type ProfileChange struct {
	Field string `json:"field"`
	From  string `json:"from"`
	To    string `json:"to"`
}

// WorkerProgress is a worker's progress as observe_agent and steer_agent
// report it (§9). Unknown is never zero: Turns is nil while the worker's
// executor reported no turn (an executor that does not pass Work.Observer
// on reports none), IdleMS nil for a worker that ran in an earlier
// process, PendingMessages nil when the executor's inbox is not this
// process's (a Steerer's, or none).
type WorkerProgress struct {
	// IdleMS is how long since the worker's last activity (its start
	// counts), up to its settlement for a settled worker.
	IdleMS *int64 `json:"idleMs"`
	// Stalled: a running worker idle for Options.StallAfter (default
	// StallAfter) or more (one waiting on its parent's decision is not
	// stalled).
	Stalled bool `json:"stalled"`
	// StallAfterMS is the idle time, in milliseconds, past which this
	// run reads a running worker stalled (Options.StallAfter, the
	// reference's progress.stallAfterMs).
	StallAfterMS int64  `json:"stallAfterMs"`
	Turns        *int64 `json:"turns"`
	// RecentActivity is the last MaxRecentActivity activities, oldest
	// first.
	RecentActivity  []Activity      `json:"recentActivity"`
	ProfileChanges  []ProfileChange `json:"profileChanges"`
	Steerable       bool            `json:"steerable"`
	PendingMessages *int            `json:"pendingMessages"`
}

// progress tracks one worker's activity in this process; its methods are
// safe for concurrent use and a nil *progress tracks nothing.
type progress struct {
	now          func() time.Time
	defaultModel string

	mu        sync.Mutex
	last      time.Time
	ended     time.Time // when the worker settled; zero while it runs
	turns     int64
	sawTurn   bool
	requested string
	recent    [MaxRecentActivity]Activity
	n         int // activities recorded in all
	changes   []ProfileChange
}

func newProgress(now func() time.Time, defaultModel string) *progress {
	p := &progress{now: now, defaultModel: defaultModel}
	p.add(Activity{Kind: ActivityStarted})
	return p
}

// add records a; p.mu is not held. A text delta following a text entry
// extends it, within MaxActivityText.
func (p *progress) add(a Activity) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.addLocked(a)
}

func (p *progress) addLocked(a Activity) {
	at := p.now()
	p.last = at
	a.AtMS = at.UnixMilli()
	if p.n > 0 && a.Kind == ActivityText {
		if prev := &p.recent[(p.n-1)%MaxRecentActivity]; prev.Kind == ActivityText {
			if room := MaxActivityText - len(prev.Text); room > 0 {
				prev.Text += clipBytes(a.Text, room)
			}
			prev.AtMS = a.AtMS
			return
		}
	}
	a.Text = clipBytes(a.Text, MaxActivityText)
	p.recent[p.n%MaxRecentActivity] = a
	p.n++
}

// settled stops the idle clock at the worker's settlement.
func (p *progress) settled() {
	if p == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.ended.IsZero() {
		p.ended = p.now()
	}
}

// snapshot is the worker's progress now; steerable, pending and whether
// it is running come from the caller, and so does stallAfter, the idle
// time that makes a running worker stalled (Options.StallAfter).
func (p *progress) snapshot(running, steerable bool, pending *int, stallAfter time.Duration) *WorkerProgress {
	out := &WorkerProgress{Steerable: steerable, PendingMessages: pending, RecentActivity: []Activity{}, ProfileChanges: []ProfileChange{},
		StallAfterMS: stallAfter.Milliseconds()}
	if p == nil {
		return out
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	end := p.now()
	if !p.ended.IsZero() {
		end = p.ended
	}
	idle := max(end.Sub(p.last).Milliseconds(), 0)
	out.IdleMS = &idle
	out.Stalled = running && p.ended.IsZero() && end.Sub(p.last) >= stallAfter
	if p.sawTurn {
		t := p.turns
		out.Turns = &t
	}
	first := max(p.n-MaxRecentActivity, 0)
	for i := first; i < p.n; i++ {
		out.RecentActivity = append(out.RecentActivity, p.recent[i%MaxRecentActivity])
	}
	out.ProfileChanges = append(out.ProfileChanges, p.changes...)
	return out
}

// change records c once.
func (p *progress) changeLocked(c ProfileChange) {
	for _, have := range p.changes {
		if have == c {
			return
		}
	}
	if len(p.changes) < 8 {
		p.changes = append(p.changes, c)
	}
}

// observer wraps inner so p sees the worker's turns and events.
func (p *progress) observer(inner kernel.Observer) kernel.Observer {
	if p == nil {
		return inner
	}
	return progressObserver{p: p, passObserver: passObserver{inner}}
}

type progressObserver struct {
	p *progress
	passObserver
}

func (o progressObserver) TurnStarted(ctx context.Context, t kernel.TurnStart) (context.Context, error) {
	p := o.p
	p.mu.Lock()
	p.turns++
	p.sawTurn = true
	p.requested = t.RequestedModel
	if t.RequestedModel != "" && p.defaultModel != "" && t.RequestedModel != p.defaultModel {
		p.changeLocked(ProfileChange{Field: "model", From: p.defaultModel, To: t.RequestedModel})
	}
	p.addLocked(Activity{Kind: ActivityTurnStarted, Text: t.RequestedModel})
	p.mu.Unlock()
	return o.passObserver.TurnStarted(ctx, t)
}

func (o progressObserver) Event(ctx context.Context, e contract.EnvironmentEvent) error {
	a := Activity{Kind: ActivityEvent, Text: e.Type}
	if n := e.Normalized; n != nil && n.MessagePartUpdated != nil && n.MessagePartUpdated.Delta != nil {
		a = Activity{Kind: ActivityText, Text: *n.MessagePartUpdated.Delta}
	}
	o.p.add(a)
	return o.passObserver.Event(ctx, e)
}

func (o progressObserver) TurnEnded(ctx context.Context, t kernel.TurnEnd) error {
	p := o.p
	p.mu.Lock()
	if s := t.Served.Model; s != "" && p.requested != "" && s != p.requested {
		p.changeLocked(ProfileChange{Field: "servedModel", From: p.requested, To: s})
	}
	p.addLocked(Activity{Kind: ActivityTurnEnded, Text: string(t.Terminal)})
	p.mu.Unlock()
	return o.passObserver.TurnEnded(ctx, t)
}

// clipBytes is s cut to at most n bytes, on a UTF-8 boundary.
func clipBytes(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && s[n]&0xC0 == 0x80 {
		n--
	}
	return s[:n]
}

// Pending is how many steers wait in the inbox for the worker's next
// turn; 0 for a nil inbox.
func (in *Inbox) Pending() int {
	if in == nil {
		return 0
	}
	in.mu.Lock()
	defer in.mu.Unlock()
	return len(in.pending)
}

// progressOf is worker id's progress block; c.mu is not held.
func (c *Coordinator) progressOf(info NodeInfo) *WorkerProgress {
	c.mu.Lock()
	w := c.workers[info.ID]
	c.mu.Unlock()
	if w == nil {
		return (*progress)(nil).snapshot(false, false, nil, c.stallAfterOrDefault())
	}
	_, steerer := c.exec.(Steerer)
	isLive := live(info)
	var pending *int
	if w.inbox != nil {
		n := w.inbox.Pending()
		pending = &n
	}
	return w.progress.snapshot(isLive && info.State == StateRunning, isLive && (w.inbox != nil || steerer), pending, c.stallAfterOrDefault())
}

// stallAfterOrDefault is the run's Options.StallAfter, StallAfter when
// it set none.
func (c *core) stallAfterOrDefault() time.Duration {
	if c.stallAfter > 0 {
		return c.stallAfter
	}
	return StallAfter
}

// profileModel is p's default model, "" when it names none.
func profileModel(p *profile.Profile) string {
	if p == nil || p.Model == nil || p.Model.Default == nil {
		return ""
	}
	return *p.Model.Default
}
