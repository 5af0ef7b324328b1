package kernel

import (
	"context"
	"fmt"
	"strconv"

	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/profile"
	"github.com/agentrt/agentrt/store"
)

// The rounds run's events, in the order a reader sees them: loop.plan,
// loop.iteration.started / .ended per iteration, loop.decision, and one
// loop.ended.

type planEvent struct {
	Round int      `json:"round"`
	Tasks int      `json:"tasks"`
	Move  PlanMove `json:"move"`
}

type decisionEvent struct {
	// Round is nil for the final decision after the plan ran out.
	Round    *int   `json:"round,omitzero"`
	Decision string `json:"decision"`
	Terminal bool   `json:"terminal"`
}

type startedEvent struct {
	Index       int    `json:"index"`
	Round       int    `json:"round"`
	Agent       string `json:"agent"`
	RunID       string `json:"runId"`
	ParentIndex *int   `json:"parentIndex,omitzero"`
	TaskDigest  string `json:"taskDigest,omitzero"`
}

type iterationEnded struct {
	Index         int             `json:"index"`
	RunID         string          `json:"runId"`
	Status        string          `json:"status"`
	Delivered     bool            `json:"delivered"`
	OutputDigest  string          `json:"outputDigest,omitzero"`
	Verdict       *Verdict        `json:"verdict,omitzero"`
	Error         string          `json:"error,omitzero"`
	Usage         canonjson.Value `json:"usage"`
	DurationMS    int64           `json:"durationMs"`
	OutputPreview string          `json:"outputPreview,omitzero"`
}

func endedEvent[T, O any](it Iteration[T, O]) iterationEnded {
	e := iterationEnded{Index: it.Index, RunID: it.RunID, Status: string(it.Status), Delivered: it.Delivered,
		Verdict: it.Verdict, Usage: UsageValue(it.Usage), DurationMS: it.EndedAt.Sub(it.StartedAt).Milliseconds()}
	if it.Status == "" {
		e.Status = string(store.StatusFailed) // the run was never recorded
	}
	if it.HasOutput {
		e.OutputDigest = digestOf(it.Output)
		e.OutputPreview = preview(it.Output, it.Text)
	}
	if it.Err != nil {
		e.Error = it.Err.Error()
	}
	return e
}

// preview is up to 280 characters of the output (its text when it is a
// string, else its canonical JSON), falling back to the run's text.
func preview(output any, text string) string {
	s := text
	if str, ok := output.(string); ok {
		s = str
	} else if v, err := canonjson.ToValue(output); err == nil {
		if b, err := canonjson.Canonical(v); err == nil {
			s = string(b)
		}
	}
	r := []rune(s)
	if len(r) > 280 {
		return string(r[:279]) + "…"
	}
	return s
}

type loopEnded struct {
	Decision   string          `json:"decision"`
	Status     string          `json:"status"`
	Iterations int             `json:"iterations"`
	Winner     *int            `json:"winner,omitzero"`
	Usage      canonjson.Value `json:"usage"`
	DurationMS int64           `json:"durationMs"`
	Error      string          `json:"error,omitzero"`
}

// record durably appends one event to the rounds run (fenced by its
// lease; once ctx ended, within the cleanup window).
func (r *rounds[T, O]) record(ctx context.Context, typ string, body any) error {
	v, err := canonjson.ToValue(body)
	if err != nil {
		return fmt.Errorf("kernel: encoding %s: %w", typ, err)
	}
	r.events++
	id := "e" + strconv.Itoa(r.events)
	if _, err := r.life.appendEvents([]store.NewEvent{{ID: id, Type: typ, Time: r.now(), Body: v}}); err != nil {
		return fmt.Errorf("kernel: recording %s of rounds %s: %w", typ, r.opts.RunID, err)
	}
	return nil
}

// RoundsAgent is one agent of a rounds run's record.
type RoundsAgent struct {
	Name          string `json:"name"`
	ProfileDigest string `json:"profileDigest"`
	Stage         int    `json:"stage"`
}

// RoundsRecord is the document of a rounds run, written by Rounds and
// read by ReadRun with the same codec.
type RoundsRecord struct {
	Task           string        `json:"task"`
	Driver         string        `json:"driver,omitzero"`
	Provider       string        `json:"provider"`
	Agents         []RoundsAgent `json:"agents"`
	MaxIterations  int           `json:"maxIterations"`
	MaxConcurrency int           `json:"maxConcurrency"`
	Decision       string        `json:"decision,omitzero"`
	Iterations     int           `json:"iterations"`
	Winner         *int          `json:"winner,omitzero"`
	Delivered      bool          `json:"delivered"`
	Usage          *Usage        `json:"usage,omitzero"`
	// CancelRequested is a cancel request another process recorded.
	CancelRequested *CancelRequest `json:"cancelRequested,omitzero"`
	Error           string         `json:"error,omitzero"`
}

// doc is the rounds run's record document.
func (r *rounds[T, O]) doc(status store.Status, runErr error) (canonjson.Value, error) {
	d := RoundsRecord{Driver: r.opts.Driver.Name, Provider: r.provider, MaxIterations: r.opts.MaxIterations,
		MaxConcurrency: r.opts.MaxConcurrency, Decision: string(r.res.Decision), Iterations: len(r.res.Iterations)}
	d.Task = preview(r.opts.Task, "")
	for i, a := range r.opts.Agents {
		dg, err := profile.Digest(a.Profile)
		if err != nil {
			return canonjson.Value{}, fmt.Errorf("kernel: agent %d's profile has no identity: %w", i, err)
		}
		d.Agents = append(d.Agents, RoundsAgent{Name: r.names[i], ProfileDigest: dg, Stage: a.Stage})
	}
	if status.Terminal() {
		d.Usage = &Usage{r.res.Usage}
		if w := r.res.Winner; w != nil {
			d.Winner, d.Delivered = &w.Index, w.Delivered
		}
	}
	if runErr != nil {
		d.Error = runErr.Error()
	}
	return canonjson.ToValue(d)
}
