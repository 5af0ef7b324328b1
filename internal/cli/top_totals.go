package cli

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/agentrt/agentrt/ledger"
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

// join adds the reports o counted to t, as if t had counted them too.
func (t *tokenSum) join(o tokenSum) {
	t.n += o.n
	t.known = t.known || o.known
	t.partial = t.partial || o.partial
}

// text renders the sum; floor marks it as a lower bound.
func (t tokenSum) text(floor bool) string {
	if !t.known {
		return "unknown"
	}
	return floorMark(floor || t.partial) + strconv.FormatInt(t.n, 10)
}

// workerLogs follows the worker logs of one run dir across looks, one
// supervise.StreamTail per label, and keeps what each log's lines say of
// each worker (workerLogNode), so a look reads only what the logs gained
// since the last one rather than every log again from its start.
type workerLogs struct {
	labels map[string]*workerLogFollow
}

// workerLogFollow is one label's log followed so far.
type workerLogFollow struct {
	tail *supervise.StreamTail
	// read is how many records the log has given since it was started.
	read  int
	nodes map[supervise.NodeID]*workerLogNode
}

// workerLogNode is what one log's lines say of one worker so far.
type workerLogNode struct {
	// started is the time of its last spawned line; hasStarted says
	// there was one.
	started    int64
	hasStarted bool
	latency    *time.Duration
	tokIn      tokenSum
	tokOut     tokenSum
	// log is its latest lines, at most 2*topLogTail before it is cut
	// back to topLogTail.
	log []string
}

func newWorkerLogFollow(dir, label string) *workerLogFollow {
	return &workerLogFollow{tail: supervise.TailWorkerLog(dir, label), nodes: map[supervise.NodeID]*workerLogNode{}}
}

// apply folds one record of the log onto the worker it names.
func (f *workerLogFollow) apply(r supervise.StreamRecord) {
	f.read++
	n := f.nodes[r.Node]
	if n == nil {
		n = &workerLogNode{}
		f.nodes[r.Node] = n
	}
	switch r.Kind {
	case supervise.StreamSpawned:
		n.started, n.hasStarted = r.AtMS, true
	case supervise.StreamSettled:
		if n.hasStarted && n.started > 0 && r.AtMS >= n.started {
			d := time.Duration(r.AtMS-n.started) * time.Millisecond
			n.latency = &d
		}
	case supervise.StreamTurnEnded:
		n.tokIn.add(r.InputTokens)
		n.tokOut.add(r.OutputTokens)
	}
	n.log = append(n.log, streamText(r))
	if len(n.log) >= 2*topLogTail {
		n.log = append(n.log[:0], n.log[len(n.log)-topLogTail:]...)
	}
}

// read takes what the logs of dir's workers gained since the last look
// and sets each worker's latency (spawned to settled), the tokens its
// turns reported and its log tail from everything its log holds. A label
// without a log (an older writer, or a worker not started yet) leaves
// its workers' numbers unknown; a log replaced or cut is read again from
// its start. It returns how many lines the logs hold that it skipped as
// unreadable and a note for each log it could not read.
func (l *workerLogs) read(ctx context.Context, dir string, workers []topWorker) (skipped int, notes []string) {
	if l.labels == nil {
		l.labels = map[string]*workerLogFollow{}
	}
	byNode := make(map[supervise.NodeID]*topWorker, len(workers))
	labels := map[string]bool{}
	for i := range workers {
		byNode[supervise.NodeID(workers[i].ID)] = &workers[i]
		if workers[i].logLabel != "" {
			labels[workers[i].logLabel] = true
		}
	}
	for _, label := range slices.Sorted(maps.Keys(labels)) {
		f := l.labels[label]
		if f == nil {
			f = newWorkerLogFollow(dir, label)
			l.labels[label] = f
		}
		recs, restarted, err := f.tail.Next(ctx)
		if restarted {
			f.read, f.nodes = 0, map[supervise.NodeID]*workerLogNode{}
		}
		for _, r := range recs {
			f.apply(r)
		}
		switch {
		case errors.Is(err, fs.ErrNotExist):
			// No log (now): what an earlier look read of one is gone
			// with it, and a log written later is read from its start.
			f = newWorkerLogFollow(dir, label)
			l.labels[label] = f
		case err != nil:
			notes = append(notes, fmt.Sprintf("worker log %q unreadable after %d line(s): %v", label, f.read, err))
		}
		skipped += f.tail.Skipped()
		for node, n := range f.nodes {
			w, ok := byNode[node]
			if !ok {
				continue
			}
			if n.latency != nil {
				d := *n.latency
				w.latency, w.Latency = &d, d.String()
			}
			w.tokIn.join(n.tokIn)
			w.tokOut.join(n.tokOut)
			w.Log = append(w.Log, n.log...)
		}
	}
	for i := range workers {
		if lg := workers[i].Log; len(lg) > topLogTail {
			workers[i].Log = slices.Clone(lg[len(lg)-topLogTail:])
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
	// usd is that cost as a number and whether it is a floor; nil when
	// unknown.
	usd *topUSD
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
		t.usd = &topUSD{micro: spent.micro, floor: spent.partMicro || spent.inFlight}
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
	return fmt.Sprintf("n=%d min %s median %s p90 %s max %s", len(l), l[0], t.rank(0.5), t.rank(0.9), l[len(l)-1])
}

// rank is the latency at quantile p by nearest rank; the latencies
// must not be empty.
func (t *topTotals) rank(p float64) time.Duration {
	l := t.Latencies
	i := int(math.Ceil(p*float64(len(l)))) - 1
	return l[min(max(i, 0), len(l)-1)]
}

// topUSD is a cost in millionths of a dollar; floor says it may be
// below the truth.
type topUSD struct {
	micro int64
	floor bool
}

// value is the sum, nil when no report counted.
func (t tokenSum) value() *int64 {
	if !t.known {
		return nil
	}
	return new(t.n)
}

// numbers is the sum as numbers; nil when no channel is known.
func (s *sumSpend) numbers() *topSpend {
	if !s.anyTokens && !s.anyMicro {
		return nil
	}
	out := &topSpend{Floor: s.inFlight}
	if s.anyTokens {
		out.Tokens = new(s.tokens)
		out.Floor = out.Floor || s.partTokens
	}
	if s.anyMicro {
		out.MicroUSD = new(s.micro)
		out.Floor = out.Floor || s.partMicro
	}
	return out
}

// totalSpend is a supervised run's recorded spend as numbers; nil when
// no channel is known.
func totalSpend(t supervise.TotalRecord) *topSpend {
	if !t.TokensKnown && !t.USDKnown {
		return nil
	}
	out := &topSpend{}
	if t.TokensKnown {
		out.Tokens = new(t.Tokens)
	}
	if t.USDKnown {
		out.MicroUSD = new(t.MicroUSD)
	}
	return out
}

// usageSpend is a ledger usage as numbers; nil when no channel was
// reported. A channel reported in part is a floor.
func usageSpend(u ledger.Usage) *topSpend {
	if !u.InputTokens.Reported && !u.OutputTokens.Reported && !u.CostUSD.Reported {
		return nil
	}
	out := &topSpend{}
	if a := u.InputTokens; a.Reported {
		out.InputTokens, out.Floor = new(a.Value), out.Floor || !a.Complete
	}
	if a := u.OutputTokens; a.Reported {
		out.OutputTokens, out.Floor = new(a.Value), out.Floor || !a.Complete
	}
	if out.InputTokens != nil && out.OutputTokens != nil {
		out.Tokens = new(*out.InputTokens + *out.OutputTokens)
	}
	if a := u.CostUSD; a.Reported {
		out.MicroUSD, out.Floor = new(int64(math.Round(a.Value*1e6))), out.Floor || !a.Complete
	}
	return out
}
