package kernel

import (
	"context"
	"errors"
	"fmt"
	"math"

	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/contract"
	"github.com/agentrt/agentrt/ledger"
	"github.com/agentrt/agentrt/store"
)

// Record is the document of an exact run (Execute, and each Rounds
// iteration) as the store keeps it: what was requested, what ran, what
// was observed. The kernel writes it and DecodeRecord and ReadRun read it
// back with the same codec, so every reader sees the same facts under
// the same names. Members unknown at the time are null (the models, the
// digests, the environment) or absent (everything a run learns as it
// ends).
type Record struct {
	Task                   string     `json:"task"`
	Provider               string     `json:"provider"`
	Stage                  int        `json:"stage"`
	Harness                string     `json:"harness,omitzero"`
	AuthoredProfileDigest  string     `json:"authoredProfileDigest"`
	EffectiveProfileDigest NullString `json:"effectiveProfileDigest"`
	RequestedModel         NullString `json:"requestedModel"`
	ServedModel            NullString `json:"servedModel"`
	ServedProvider         NullString `json:"servedProvider"`
	EnvironmentID          NullString `json:"environmentId"`
	// EnvironmentCreated says the runtime created the environment (its
	// create answered CreationCreated, or the run it was taken over from
	// proved so): the proof a process that finds it by lookup needs
	// before it destroys it (ENV-06). Absent when unproven.
	EnvironmentCreated bool `json:"environmentCreated,omitzero"`
	// EnvironmentKept says the run ended in doubt and left its
	// environment alive for its caller to settle (Request.KeepInDoubt);
	// absent otherwise.
	EnvironmentKept bool `json:"environmentKept,omitzero"`
	// NativeSessionID is the provider's own conversation id the run
	// observed (native.session.observed), bound to this run (NSO-02);
	// absent when none was observed.
	NativeSessionID string `json:"nativeSessionId,omitzero"`
	// Continuity is ContinuityNative when the run went on natively in a
	// kept session (Request.Continue); absent otherwise.
	Continuity string `json:"continuity,omitzero"`
	// Events is how many events the run had recorded when the document
	// was last written.
	Events int `json:"events"`
	// Terminal is set once the run ended.
	Terminal *Terminal `json:"terminal,omitzero"`
	// Usage is the run's usage once it ended; unknown channels unknown,
	// floors marked.
	Usage *Usage `json:"usage,omitzero"`
	// Text is the text the run produced (set once it ended).
	Text *string `json:"text,omitzero"`
	// Delivered is set once the run ended: true only when its
	// completion check passed.
	Delivered *bool           `json:"delivered,omitzero"`
	Output    canonjson.Value `json:"output,omitzero"`
	Verdict   *Verdict        `json:"verdict,omitzero"`
	// CheckError says why the check could not judge.
	CheckError string `json:"checkError,omitzero"`
	// JudgedBy is Request.JudgedBy: who, outside this run, decides its
	// delivery; Delivered is then absent.
	JudgedBy string `json:"judgedBy,omitzero"`
	// FailureReceipt is what the provider observed of an execution it
	// rejected (contract.ExecutionError).
	FailureReceipt *contract.ExecutionFailureReceipt `json:"failureReceipt,omitzero"`
	// CancelRequested is a cancel request another process recorded
	// (RequestCancel).
	CancelRequested *CancelRequest `json:"cancelRequested,omitzero"`
	// TeardownUnconfirmed is Result.TeardownUnconfirmed: why the
	// environment the run created was not confirmed destroyed; absent
	// when it was (or none was to be).
	TeardownUnconfirmed string `json:"teardownUnconfirmed,omitzero"`
}

// NullString is a document member that is null while unknown: the empty
// string is written (and read) as null.
type NullString string

// MarshalValue implements canonjson.ValueMarshaler.
func (s NullString) MarshalValue() (canonjson.Value, error) {
	if s == "" {
		return canonjson.NullValue(), nil
	}
	return canonjson.StringValue(string(s)), nil
}

// UnmarshalValue implements canonjson.ValueUnmarshaler.
func (s *NullString) UnmarshalValue(v canonjson.Value) error {
	switch v.Kind() {
	case canonjson.Null:
		*s = ""
	case canonjson.String:
		if v.Str() == "" {
			return errors.New("an empty string where null means unknown")
		}
		*s = NullString(v.Str())
	default:
		return errors.New("want a string or null")
	}
	return nil
}

// Terminal is how a run ended: its status and, for a run that did not
// complete, the reason and detail.
type Terminal struct {
	Status store.Status `json:"status"`
	Reason string       `json:"reason,omitzero"`
	Detail string       `json:"detail,omitzero"`
}

// CancelRequest is a recorded cancel request.
type CancelRequest struct {
	Reason string `json:"reason"`
	At     string `json:"at"`
}

// Usage is ledger.Usage in a run document: every channel present, null
// when unknown, a number when exact, {"atLeast": n} when a floor.
type Usage struct{ ledger.Usage }

// MarshalValue implements canonjson.ValueMarshaler.
func (u Usage) MarshalValue() (canonjson.Value, error) { return UsageValue(u.Usage), nil }

// UnmarshalValue implements canonjson.ValueUnmarshaler.
func (u *Usage) UnmarshalValue(v canonjson.Value) error {
	parsed, err := ParseUsage(v)
	if err != nil {
		return err
	}
	u.Usage = parsed
	return nil
}

// usageChannels are UsageValue's members, in order.
var usageChannels = []string{"cacheReadTokens", "cacheWriteTokens", "costUsd", "inputTokens", "outputTokens", "reasoningTokens"}

// ParseUsage reads a usage written by UsageValue. Every channel must be
// present; a channel that is not null, a non-negative number or
// {"atLeast": non-negative number} is an error naming it.
func ParseUsage(v canonjson.Value) (ledger.Usage, error) {
	if v.Kind() != canonjson.Object {
		return ledger.Usage{}, errors.New("usage is not an object")
	}
	if n := len(v.Members()); n != len(usageChannels) {
		return ledger.Usage{}, fmt.Errorf("usage has %d members, want the %d channels", n, len(usageChannels))
	}
	var u ledger.Usage
	tokens := []*ledger.Amount[int64]{&u.CacheReadTokens, &u.CacheWriteTokens, nil, &u.InputTokens, &u.OutputTokens, &u.ReasoningTokens}
	for i, name := range usageChannels {
		c, ok := v.Get(name)
		if !ok {
			return ledger.Usage{}, fmt.Errorf("usage lacks %s", name)
		}
		value, reported, complete, err := parseAmount(c)
		if err != nil {
			return ledger.Usage{}, fmt.Errorf("usage %s: %w", name, err)
		}
		if tokens[i] == nil {
			u.CostUSD = ledger.Amount[float64]{Value: value, Reported: reported, Complete: complete}
			continue
		}
		if value != math.Trunc(value) || value > 1<<53 {
			return ledger.Usage{}, fmt.Errorf("usage %s: %v is not a token count", name, value)
		}
		*tokens[i] = ledger.Amount[int64]{Value: int64(value), Reported: reported, Complete: complete}
	}
	return u, nil
}

func parseAmount(c canonjson.Value) (value float64, reported, complete bool, err error) {
	switch c.Kind() {
	case canonjson.Null:
		return 0, false, false, nil
	case canonjson.Number:
		value, complete = c.Float(), true
	case canonjson.Object:
		floor, ok := c.Get("atLeast")
		if !ok || len(c.Members()) != 1 || floor.Kind() != canonjson.Number {
			return 0, false, false, errors.New(`want null, a number or {"atLeast": number}`)
		}
		value = floor.Float()
	default:
		return 0, false, false, errors.New(`want null, a number or {"atLeast": number}`)
	}
	if value < 0 || math.IsInf(value, 0) || math.IsNaN(value) {
		return 0, false, false, fmt.Errorf("%v is not a non-negative amount", value)
	}
	return value, true, complete, nil
}

// DecodeRoundsRecord reads a rounds run's document.
func DecodeRoundsRecord(doc canonjson.Value) (*RoundsRecord, error) {
	var r RoundsRecord
	if err := canonjson.FromValue(doc, &r); err != nil {
		return nil, fmt.Errorf("kernel: the run document is not a rounds record: %w", err)
	}
	return &r, nil
}

// DecodeToolLoopRecord reads a tool loop's document.
func DecodeToolLoopRecord(doc canonjson.Value) (*ToolLoopRecord, error) {
	var r ToolLoopRecord
	if err := canonjson.FromValue(doc, &r); err != nil {
		return nil, fmt.Errorf("kernel: the run document is not a tool loop's record: %w", err)
	}
	return &r, nil
}

// DecodeRecord reads an exact run's document.
func DecodeRecord(doc canonjson.Value) (*Record, error) {
	var r Record
	if err := canonjson.FromValue(doc, &r); err != nil {
		return nil, fmt.Errorf("kernel: the run document is not an exact run's record: %w", err)
	}
	return &r, nil
}

// Run kinds with documents of their own; every other kind is an exact
// run's (execute, iteration, or the Kind an Execute caller chose).
const (
	KindRounds   = "rounds"
	KindToolLoop = "tool-loop"
)

// IsExactKind reports whether runs of kind carry a Record.
func IsExactKind(kind string) bool {
	return kind != KindRounds && kind != KindToolLoop && kind != KindRuntime && kind != KindSeated
}

// RunRecord is a recorded run read back through one codec: the store's
// row, the typed document of an exact run, and the spend its ledger
// holds.
type RunRecord struct {
	store.Run
	// Exactly one of Exact, Rounds, ToolLoop, Runtime and Seated is the run's typed
	// document, by its kind — none when the document could not be read
	// (DocErr says why). A tool loop recorded under a Kind of its
	// caller's choosing reads as exact only if its document is one.
	Exact    *Record
	Rounds   *RoundsRecord
	ToolLoop *ToolLoopRecord
	Runtime  *RuntimeRecord
	Seated   *SeatedRecord
	DocErr   error
	// Events is how many events the store holds for the run.
	Events int64
	// Spend is the run's spend as its ledger states it: the last entry
	// (entries are snapshots). Reported is false on every channel when
	// the ledger is empty. For a run that did not end — interrupted — it
	// is the last progress it reported, a floor.
	Spend ledger.Usage
	// LedgerEntries counts the run's ledger entries.
	LedgerEntries int
}

// ReadRun reads run id from s: its row, its typed record, the number of
// events the store holds and its spend from the ledger. A missing run is
// store.ErrNotFound.
func ReadRun(ctx context.Context, s store.Store, id string) (*RunRecord, error) {
	r, err := s.GetRun(ctx, id)
	if err != nil {
		return nil, err
	}
	out := &RunRecord{Run: r}
	if r.Doc.IsValid() {
		switch r.Kind {
		case KindRounds:
			out.Rounds, out.DocErr = DecodeRoundsRecord(r.Doc)
		case KindToolLoop:
			out.ToolLoop, out.DocErr = DecodeToolLoopRecord(r.Doc)
		case KindRuntime:
			out.Runtime, out.DocErr = DecodeRuntimeRecord(r.Doc)
		case KindSeated:
			out.Seated, out.DocErr = DecodeSeatedRecord(r.Doc)
		default:
			out.Exact, out.DocErr = DecodeRecord(r.Doc)
			if out.DocErr != nil {
				// A tool loop recorded under its caller's own kind.
				if tl, err := DecodeToolLoopRecord(r.Doc); err == nil {
					out.ToolLoop, out.DocErr = tl, nil
				}
			}
		}
	}
	for after := ""; ; {
		page, err := s.Events(ctx, id, after, 1000)
		if err != nil {
			return nil, fmt.Errorf("kernel: reading run %s's events: %w", id, err)
		}
		out.Events += int64(len(page))
		if len(page) < 1000 {
			break
		}
		after = page[len(page)-1].Cursor
	}
	entries, err := s.Ledger(ctx, id)
	if err != nil {
		return nil, fmt.Errorf("kernel: reading run %s's ledger: %w", id, err)
	}
	out.LedgerEntries = len(entries)
	if len(entries) > 0 {
		if u, ok := entries[len(entries)-1].Body.Get("usage"); ok {
			if out.Spend, err = ParseUsage(u); err != nil {
				return nil, fmt.Errorf("kernel: run %s's last ledger entry: %w", id, err)
			}
		}
	}
	if !r.Status.Terminal() || r.Status == store.StatusInterrupted {
		out.Spend = out.Spend.Floor() // the run is not over, or never ended
	}
	return out, nil
}

// typed is an execution's document.
func (x *execution) typed() Record {
	r := &x.res
	rec := Record{
		Task: x.req.Task, Provider: x.provider, Stage: x.req.Stage, Harness: string(x.req.Profile.Harness),
		AuthoredProfileDigest: r.AuthoredDigest, EffectiveProfileDigest: NullString(r.EffectiveDigest),
		RequestedModel: NullString(r.RequestedModel), ServedModel: NullString(r.Served.Model), ServedProvider: NullString(r.Served.Provider),
		EnvironmentID: NullString(r.EnvironmentID), EnvironmentCreated: x.createdEnv(), EnvironmentKept: r.EnvironmentKept, Events: r.Events,
		NativeSessionID: r.NativeSessionID, Continuity: r.Continuity,
	}
	if x.req.Check == nil {
		// Named from the start: a run cut off by a killed process stays
		// running in the store, and still says who judges it.
		rec.JudgedBy = x.req.JudgedBy
	}
	if r.Status.Terminal() {
		text, delivered := r.Text, r.Delivered
		rec.Terminal = &Terminal{Status: r.Status, Reason: r.Reason, Detail: r.Detail}
		rec.Usage, rec.Text, rec.Delivered = &Usage{r.Usage}, &text, &delivered
		if rec.JudgedBy != "" {
			rec.Delivered = nil
		}
		rec.Output, rec.Verdict, rec.CheckError, rec.FailureReceipt = r.Output, r.Verdict, r.CheckError, r.Receipt
		rec.TeardownUnconfirmed = r.TeardownUnconfirmed
	}
	return rec
}
