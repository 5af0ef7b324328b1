package supervise

import (
	"context"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/tools"
)

// MaxObservePage bounds one page of a worker's output observe_agent
// returns, in bytes; it is also the default page.
const MaxObservePage = 16000

// DefaultOutputPath is the member of a worker's result observe_agent
// pages through when its outputPath is omitted: the text it produced.
// The result is {"text": …, "output": …} (output only when the worker
// produced a structured one).
const DefaultOutputPath = "/text"

// observePage is the page observe_agent asks for, checked.
type observePage struct {
	path          string
	offset, limit int64
}

// checkObserveArgs refuses arguments out of range with a
// *tools.ArgumentsError naming the member's JSON pointer.
func checkObserveArgs(a ObserveArgs) (observePage, error) {
	p := observePage{path: a.OutputPath, offset: a.Offset, limit: a.Limit}
	if p.path == "" {
		p.path = DefaultOutputPath
	}
	switch {
	case !strings.HasPrefix(p.path, "/") || !validPointer(p.path):
		return p, &tools.ArgumentsError{Path: "/outputPath", Reason: fmt.Sprintf("are refused: %q is not a JSON pointer into the worker's result (use /text or /output/…)", a.OutputPath)}
	case len(p.path) > 1024:
		return p, &tools.ArgumentsError{Path: "/outputPath", Reason: "are refused: the pointer is longer than 1024 bytes"}
	case p.offset < 0:
		return p, &tools.ArgumentsError{Path: "/offset", Reason: fmt.Sprintf("are refused: offset %d is negative", p.offset)}
	case p.limit < 0 || p.limit > MaxObservePage:
		return p, &tools.ArgumentsError{Path: "/limit", Reason: fmt.Sprintf("are refused: limit %d is outside 0…%d bytes", p.limit, MaxObservePage)}
	}
	if p.limit == 0 {
		p.limit = MaxObservePage
	}
	return p, nil
}

// validPointer reports whether p is a JSON pointer (RFC 6901): every
// '~' is followed by '0' or '1'.
func validPointer(p string) bool {
	for i := 0; i < len(p); i++ {
		if p[i] == '~' && (i+1 == len(p) || (p[i+1] != '0' && p[i+1] != '1')) {
			return false
		}
	}
	return utf8.ValidString(p)
}

// valueAt is the value at path in a worker's result as observe_agent
// pages it: a string as itself, anything else as canonical JSON.
func valueAt(result canonjson.Value, path string) (string, error) {
	v, ok := canonjson.Resolve(result, path)
	if !ok {
		return "", &tools.ArgumentsError{Path: "/outputPath", Reason: fmt.Sprintf("are refused: the worker's result has no %s (it holds /text and, when structured, /output)", path)}
	}
	if v.Kind() == canonjson.String {
		return v.Str(), nil
	}
	b, err := canonjson.Canonical(v)
	if err != nil {
		return "", fmt.Errorf("supervise: encoding %s of the worker's result: %w", path, err)
	}
	return string(b), nil
}

// pagedValue is the last value a worker's output was paged through: a
// settled result never changes, so reading its pages in turn encodes it
// once, not once per page.
type pagedValue struct {
	path, whole string
}

// pageOf fills o's output page of whole, the value at p.path: from
// p.offset, at most p.limit bytes, cut on UTF-8 boundaries so that the
// pages joined in nextOffset order are the value exactly.
func pageOf(o *Observation, whole string, p observePage) error {
	total := int64(len(whole))
	if p.offset > total {
		return &tools.ArgumentsError{Path: "/offset", Reason: fmt.Sprintf("are refused: offset %d is past the end of %s (%d bytes)", p.offset, p.path, total)}
	}
	start := int(p.offset)
	for start > 0 && start < len(whole) && !utf8.RuneStart(whole[start]) {
		start-- // an offset inside a character starts at the character
	}
	end := min(int64(start)+p.limit, total)
	e := int(end)
	for e > start && e < len(whole) && !utf8.RuneStart(whole[e]) {
		e--
	}
	if e == start && start < len(whole) {
		// A page smaller than the character it starts at still holds it.
		_, size := utf8.DecodeRuneInString(whole[start:])
		e = start + size
	}
	o.Output, o.OutputPath, o.Offset, o.OutputBytes = whole[start:e], p.path, int64(start), &total
	if int64(e) < total {
		next := int64(e)
		o.NextOffset = &next
	}
	return nil
}

// ObservePage is observe_agent: Observe with the worker's settled output
// paged (ObserveArgs.OutputPath, Offset and Limit). Arguments out of
// range are a *tools.ArgumentsError naming the member (/outputPath,
// /offset, /limit); an unknown worker is ErrUnknownWorker.
func (c *Coordinator) ObservePage(_ context.Context, a ObserveArgs) (Observation, error) {
	p, err := checkObserveArgs(a)
	if err != nil {
		return Observation{}, err
	}
	info, ok := c.scope.Node(a.WorkerID)
	if !ok || !c.reaches(a.WorkerID) {
		return Observation{}, fmt.Errorf("%w: %s", ErrUnknownWorker, a.WorkerID)
	}
	o := Observation{WorkerID: info.ID, Label: info.Label, Profile: info.Profile, Status: info.State, InDoubt: info.InDoubt,
		Reserved: budgetRecord(info.Reserved)}
	if info.Settlement != nil {
		o.Spent = spendRecord(info.Settlement.Spent)
		o.Reason = info.Settlement.Reason
	}
	c.mu.Lock()
	w := c.workers[info.ID]
	var (
		result  canonjson.Value
		cached  *pagedValue
		settled bool
	)
	if w != nil && w.settling {
		// Its settled record is not durable yet: it is still running
		// as far as its manager can know (Await has not returned it).
		o.Status, o.Spent, o.Reason = StateRunning, nil, ""
		info.Settlement = nil
	} else if w != nil {
		if info.InDoubt && o.Reason == "" {
			o.Reason = w.reason // why it could not be recovered
		}
		o.Delivered, o.Verdict, o.OutRef = w.delivered, w.verdict, w.outRef
		if settled = info.Settlement != nil && (w.text != "" || w.output.IsValid() || w.outRef != ""); settled {
			result, cached = resultValue(w.text, w.output), w.paged
		}
	}
	c.mu.Unlock()
	o.Progress = c.progressOf(info)
	o.Steerable = o.Progress.Steerable
	if !settled {
		return o, nil
	}
	if cached == nil || cached.path != p.path {
		whole, err := valueAt(result, p.path)
		if err != nil {
			return Observation{}, err
		}
		cached = &pagedValue{path: p.path, whole: whole}
		c.mu.Lock()
		w.paged = cached
		c.mu.Unlock()
	}
	if err := pageOf(&o, cached.whole, p); err != nil {
		return Observation{}, err
	}
	return o, nil
}
