package cli

import (
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/agentrt/agentrt/contract"
	"github.com/agentrt/agentrt/providers/chatprovider"
)

// liveRun shows a run while it happens: the model's text on one writer
// as each delta becomes durable, and what the run is waiting for — the
// first token, a retry of the model's request, a tool call, the model,
// an answer — on a status line.
// Its methods are safe for concurrent use (a ticker redraws the line).
type liveRun struct {
	mu     sync.Mutex
	text   io.Writer   // the model's text; nil to not stream it
	status *statusLine // nil to show no progress
	shared bool        // text and status share one screen
	label  string      // what runs where
	short  string      // what runs, briefly
	now    func() time.Time

	start    time.Time
	phase    string // what the run is doing or waiting for
	first    bool   // the first token arrived
	streamed bool   // some text was written
	atStart  bool   // the text written ends a line
	tools    map[string]string
	ended    bool
	stop     chan struct{}
	ticker   sync.WaitGroup
}

// liveOptions configure a liveRun.
type liveOptions struct {
	// Text receives the model's text; nil streams none.
	Text io.Writer
	// Status receives progress; nil shows none.
	Status io.Writer
	// Label says what runs where, e.g. "note-writer.json with scripted";
	// Short says it within a status line, e.g. "scripted".
	Label, Short string
}

// tickEvery is how often a terminal's status line redraws its clock.
const tickEvery = 200 * time.Millisecond

func newLiveRun(o liveOptions) *liveRun {
	l := &liveRun{text: o.Text, label: o.Label, short: o.Short, now: time.Now, tools: map[string]string{}, atStart: true}
	if o.Status != nil {
		tty, width := terminal(o.Status)
		l.status = &statusLine{w: o.Status, tty: tty, width: width}
		if o.Text != nil && tty {
			l.shared, _ = terminal(o.Text)
		}
	}
	return l
}

// begin shows that the run started; on a terminal a ticker keeps the
// status line's clock going until end.
func (l *liveRun) begin() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.start = l.now()
	if l.status == nil {
		return
	}
	if !l.status.tty {
		l.status.set("running " + l.label + "…")
		l.phase = "waiting for the first token"
		return
	}
	l.setPhase("waiting for the first token")
	l.stop = make(chan struct{})
	l.ticker.Go(func() {
		t := time.NewTicker(tickEvery)
		defer t.Stop()
		for {
			select {
			case <-l.stop:
				return
			case <-t.C:
				l.mu.Lock()
				if !l.ended {
					l.status.set(l.render())
				}
				l.mu.Unlock()
			}
		}
	})
}

// render is the terminal's status line: what runs, for how long it has
// run, and what it is doing or waiting for (last, as a narrow terminal
// clips it).
func (l *liveRun) render() string {
	return fmt.Sprintf("%s · %s · %s", l.short, clock(l.now().Sub(l.start)), l.phase)
}

// setPhase records what the run is doing now and shows it: on a terminal
// as the status line, elsewhere as a line — once, however often the run
// repeats it.
func (l *liveRun) setPhase(phase string) {
	if l.status == nil || (phase == l.phase && !l.status.tty) {
		return
	}
	l.phase = phase
	if l.status.tty {
		l.status.set(l.render())
	} else {
		l.status.set(phase)
	}
}

// event shows one envelope of the run.
func (l *liveRun) event(env contract.EventEnvelope) {
	l.mu.Lock()
	defer l.mu.Unlock()
	e := env.Event
	switch {
	case e.MessagePartUpdated != nil:
		l.part(e.MessagePartUpdated)
	case e.ModelProcessing != nil:
		p := e.ModelProcessing
		switch {
		case p.Phase == contract.ModelPhaseToolResult && p.ToolName != nil:
			l.setPhase("model reading the result of " + *p.ToolName)
		case p.Phase == contract.ModelPhaseToolResult:
			l.setPhase("model reading a tool result")
		default:
			l.setPhase("model " + p.Phase)
		}
	case e.ToolHeartbeat != nil:
		h := e.ToolHeartbeat
		l.setPhase(fmt.Sprintf("tool %s running for %s", h.ToolName, seconds(ms(h.ElapsedMs))))
	case e.ToolSlow != nil:
		s := e.ToolSlow
		l.setPhase(fmt.Sprintf("tool %s slow: running for %s (over %s)", s.ToolName, seconds(ms(s.ElapsedMs)), seconds(ms(s.ThresholdMs))))
	case e.Interaction != nil:
		r := e.Interaction.Request
		l.setPhase(fmt.Sprintf("waiting for an answer (%s %s): %s", r.Kind, r.ID, r.Title))
	case e.InteractionCancel != nil:
		l.setPhase("interaction " + e.InteractionCancel.ID + " withdrawn")
	case e.Warning != nil && e.Warning.Code == chatprovider.WarningModelRetry:
		// Not a problem yet: the provider waits and sends the request
		// again, and says so (when, which attempt, after what).
		l.setPhase(e.Warning.Message)
	case e.Warning != nil:
		l.setPhase("warning " + e.Warning.Code + ": " + e.Warning.Message)
	}
}

// part shows a message part's update: a text delta is written out, a
// reasoning part or a tool call's new state becomes the status.
func (l *liveRun) part(u *contract.MessagePartUpdatedEvent) {
	p := u.Part
	switch {
	case p.IsText() && u.Delta != nil && *u.Delta != "":
		if !l.first {
			l.first = true
			l.setPhase("first token after " + seconds(l.now().Sub(l.start)))
		}
		l.write(*u.Delta)
	case p.IsReasoning():
		l.setPhase("model thinking")
	case p.IsTool() && p.State != nil:
		id := p.ID
		if p.CallID != nil {
			id = *p.CallID
		}
		st := p.State.Status
		if l.tools[id] == st {
			return
		}
		l.tools[id] = st
		name := "?"
		if p.Tool != nil {
			name = *p.Tool
		}
		switch st {
		case contract.ToolStatusPending:
			l.setPhase("tool " + name + " called")
		case contract.ToolStatusRunning:
			l.setPhase("tool " + name + " running")
		case contract.ToolStatusCompleted:
			l.setPhase("tool " + name + " done")
		case contract.ToolStatusError, contract.ToolStatusFailed:
			msg := "tool " + name + " failed"
			if p.State.Error != nil {
				msg += ": " + strings.ReplaceAll(*p.State.Error, "\n", " ")
			}
			l.setPhase(msg)
		default:
			l.setPhase("tool " + name + " " + st)
		}
	}
}

// write writes model text out at once, keeping a status line on the same
// screen out of its way.
func (l *liveRun) write(s string) {
	if l.text == nil {
		return
	}
	l.streamed = true
	l.atStart = strings.HasSuffix(s, "\n")
	out := func() {
		io.WriteString(l.text, s)
		if f, ok := l.text.(interface{ Flush() error }); ok {
			f.Flush()
		}
	}
	if l.shared {
		l.status.yield(out, l.atStart)
		return
	}
	out()
}

// end stops the status line and clears it from a terminal. final is the
// run's recorded text: written out when the provider streamed none (it
// reported its text only at the end). The text ends with a blank line, so
// what follows stands apart.
func (l *liveRun) end(final string) {
	l.mu.Lock()
	l.ended = true
	if l.stop != nil {
		close(l.stop)
	}
	l.mu.Unlock()
	l.ticker.Wait()

	l.mu.Lock()
	defer l.mu.Unlock()
	if l.status != nil {
		l.status.done()
	}
	if l.text == nil {
		return
	}
	if !l.streamed && final != "" {
		l.write(final)
	}
	if l.streamed {
		if !l.atStart {
			io.WriteString(l.text, "\n")
		}
		io.WriteString(l.text, "\n")
	}
}

// ms converts milliseconds as events carry them to a duration.
func ms(v float64) time.Duration { return time.Duration(v * float64(time.Millisecond)) }

// seconds renders a duration for people: "850ms", "1.5s", "2m3s".
func seconds(d time.Duration) string {
	if d < time.Second {
		return d.Round(time.Millisecond).String()
	}
	return d.Round(100 * time.Millisecond).String()
}

// clock renders the time a run has run so far, steady as it ticks:
// "0.2s", "12.6s", "2m3s".
func clock(d time.Duration) string {
	if d < time.Minute {
		return fmt.Sprintf("%.1fs", d.Seconds())
	}
	return d.Truncate(time.Second).String()
}
