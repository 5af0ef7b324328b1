package cli

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/agentrt/agentrt/supervise"
)

// tokenSum adds the tokens of one channel that turns reported. A turn
// that did not report the channel makes the sum a floor; no report at
// all leaves it unknown, never zero.
type tokenSum struct {
	n       int64
	known   bool
	partial bool
}

// add counts one report: v nil is a turn that did not report.
func (t *tokenSum) add(v *int64) {
	if v == nil {
		t.partial = true
		return
	}
	t.n, t.known = t.n+*v, true
}

// merge adds another sum into t.
func (t *tokenSum) merge(o tokenSum) {
	if o.known {
		t.n, t.known = t.n+o.n, true
	}
	t.partial = t.partial || o.partial || !o.known
}

// text renders the sum; floor marks it as a lower bound.
func (t tokenSum) text(floor bool) string {
	if !t.known {
		return "unknown"
	}
	return floorMark(floor || t.partial) + strconv.FormatInt(t.n, 10)
}

// readWorkerLogs reads the worker logs of dir once per label and takes
// from each worker's lines its latency (spawned to settled), the tokens
// its turns reported and its log tail. A label without a log (an older
// writer, or a worker not started yet) leaves its workers' numbers
// unknown. It returns how many lines it skipped as unreadable and a
// note for each log it could not read.
func readWorkerLogs(ctx context.Context, dir string, workers []topWorker) (skipped int, notes []string) {
	byNode := make(map[supervise.NodeID]*topWorker, len(workers))
	labels := map[string]bool{}
	for i := range workers {
		byNode[supervise.NodeID(workers[i].ID)] = &workers[i]
		if workers[i].logLabel != "" {
			labels[workers[i].logLabel] = true
		}
	}
	for _, label := range slices.Sorted(func(yield func(string) bool) {
		for l := range labels {
			if !yield(l) {
				return
			}
		}
	}) {
		recs, n, err := supervise.ReadWorkerLog(ctx, dir, label)
		skipped += n
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			notes = append(notes, fmt.Sprintf("worker log %q unreadable after %d line(s): %v", label, len(recs), err))
		}
		started := map[supervise.NodeID]int64{}
		for _, r := range recs {
			w, ok := byNode[r.Node]
			if !ok {
				continue
			}
			switch r.Kind {
			case supervise.StreamSpawned:
				started[r.Node] = r.AtMS
			case supervise.StreamSettled:
				if at, ok := started[r.Node]; ok && at > 0 && r.AtMS >= at {
					d := time.Duration(r.AtMS-at) * time.Millisecond
					w.latency = &d
					w.Latency = d.String()
				}
			case supervise.StreamTurnEnded:
				w.tokIn.add(r.InputTokens)
				w.tokOut.add(r.OutputTokens)
			}
			w.Log = append(w.Log, streamText(r))
			if len(w.Log) > 2*topLogTail {
				w.Log = slices.Delete(w.Log, 0, len(w.Log)-topLogTail)
			}
		}
	}
	for i := range workers {
		if l := workers[i].Log; len(l) > topLogTail {
			workers[i].Log = l[len(l)-topLogTail:]
		}
	}
	return skipped, notes
}

// streamText is a one-line rendering of a worker log record.
func streamText(r supervise.StreamRecord) string {
	at := "unknown "
	if r.AtMS > 0 {
		at = time.UnixMilli(r.AtMS).UTC().Format("15:04:05")
	}
	s := fmt.Sprintf("%s %-12s", at, r.Kind)
	switch r.Kind {
	case supervise.StreamTurnEnded:
		in, out := tokenSum{}, tokenSum{}
		in.add(r.InputTokens)
		out.add(r.OutputTokens)
		s += fmt.Sprintf(" %s in %s out %s", r.Terminal, in.text(false), out.text(false))
	case supervise.StreamSettled:
		s += " " + string(r.State)
	case supervise.StreamTurnStarted:
		s += " " + r.Model
	case supervise.StreamToolStarted, supervise.StreamToolEnded:
		s += " " + r.Tool
	case supervise.StreamSteer, supervise.StreamCancel:
		s += " " + r.OperationID + " " + r.Effect
	}
	if r.Text != "" {
		s += " " + oneLine(clip(r.Text, 120))
	}
	if r.Reason != "" {
		s += " (" + oneLine(clip(r.Reason, 120)) + ")"
	}
	return strings.TrimRight(s, " ")
}

// topTotals sums a supervise run's workers as runtime spec §11 lists:
// counts by state, in flight against settled, tokens in and out, usd
// and the latency distribution. Unknowns stay unknown.
type topTotals struct {
	// States counts the workers in each state.
	States map[string]int
	// InFlight and Settled split the workers: running against the rest.
	InFlight, Settled int
	// TokIn and TokOut sum the tokens the workers' turns reported.
	TokIn, TokOut tokenSum
	// USD is the settled spend's cost, rendered as the run's spend is.
	USD string
	// Latencies are the settled workers' latencies that are known,
	// sorted.
	Latencies []time.Duration
}

// totalsOf sums workers; spent is their settled spend as the journal
// recorded it.
func totalsOf(workers []topWorker, spent sumSpend) *topTotals {
	t := &topTotals{States: map[string]int{}}
	for _, w := range workers {
		t.States[w.State]++
		if w.State == "running" {
			t.InFlight++
		} else {
			t.Settled++
		}
		t.TokIn.merge(w.tokIn)
		t.TokOut.merge(w.tokOut)
		if w.latency != nil {
			t.Latencies = append(t.Latencies, *w.latency)
		}
	}
	slices.Sort(t.Latencies)
	t.USD = "unknown"
	if spent.anyMicro {
		t.USD = floorMark(spent.partMicro || spent.inFlight) + microUSD(spent.micro)
	}
	return t
}

// topStateOrder is the order states are listed in; others follow by
// name.
var topStateOrder = []string{"running", "done", "down", "cancelled"}

// lines renders the totals for the overview.
func (t *topTotals) lines() []string {
	n := 0
	for _, c := range t.States {
		n += c
	}
	var parts []string
	for _, s := range topStateOrder {
		if c := t.States[s]; c > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", c, s))
		}
	}
	var rest []string
	for s, c := range t.States {
		if c > 0 && !slices.Contains(topStateOrder, s) {
			rest = append(rest, fmt.Sprintf("%d %s", c, s))
		}
	}
	slices.Sort(rest)
	parts = append(parts, rest...)
	counts := fmt.Sprintf("%d worker(s)", n)
	if len(parts) > 0 {
		counts += ": " + strings.Join(parts, " · ")
	}
	floor := t.InFlight > 0
	return []string{
		fmt.Sprintf("TOTALS  %s; %d in flight, %d settled", counts, t.InFlight, t.Settled),
		fmt.Sprintf("        tok in %s out %s; usd %s; latency %s", t.TokIn.text(floor), t.TokOut.text(floor), t.USD, t.latencyText()),
	}
}

// latencyText is the latency distribution: n, min, median, p90, max
// (nearest rank); n=0 when no worker's latency is known.
func (t *topTotals) latencyText() string {
	l := t.Latencies
	if len(l) == 0 {
		return "n=0 (unknown)"
	}
	rank := func(p float64) time.Duration {
		i := int(math.Ceil(p*float64(len(l)))) - 1
		return l[min(max(i, 0), len(l)-1)]
	}
	return fmt.Sprintf("n=%d min %s median %s p90 %s max %s", len(l), l[0], rank(0.5), rank(0.9), l[len(l)-1])
}
