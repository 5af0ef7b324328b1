package conversation

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/agentrt/agentrt/canonjson"
)

// Default limits (see Limits).
const (
	DefaultMaxRunIDBytes = 256
	DefaultMaxTurnBytes  = 1 << 20
	DefaultMaxRunBytes   = 64 << 20
)

// Limits bound what a journal accepts and reads. The zero value means
// the defaults; a negative field is treated as its default too.
type Limits struct {
	// MaxRunIDBytes bounds a run id's length.
	MaxRunIDBytes int
	// MaxTurnBytes bounds one turn's canonical JSON, and one halt's.
	MaxTurnBytes int
	// MaxRunBytes bounds the canonical JSON of all of a run's turns
	// together, which is what LoadRun holds in memory.
	MaxRunBytes int64
}

func (l Limits) withDefaults() Limits {
	if l.MaxRunIDBytes <= 0 {
		l.MaxRunIDBytes = DefaultMaxRunIDBytes
	}
	if l.MaxTurnBytes <= 0 {
		l.MaxTurnBytes = DefaultMaxTurnBytes
	}
	if l.MaxRunBytes <= 0 {
		l.MaxRunBytes = DefaultMaxRunBytes
	}
	return l
}

// recordBytes bounds a file record: a turn or halt, its run id (escaping
// at most doubles it, as control characters are refused) and the
// record's other members.
func (l Limits) recordBytes() int { return l.MaxTurnBytes + 2*l.MaxRunIDBytes + 128 }

// timeLayout is JavaScript's Date.prototype.toISOString for years 0–9999.
const timeLayout = "2006-01-02T15:04:05.000Z"

func formatTime(t time.Time) string { return t.UTC().Format(timeLayout) }

// checkTime refuses a time the journal cannot write as toISOString does.
func checkTime(t time.Time, pointer string) error {
	if t.IsZero() {
		return &InvalidError{Pointer: pointer, Reason: "time is zero"}
	}
	if y := t.UTC().Year(); y < 0 || y > 9999 {
		return &InvalidError{Pointer: pointer, Reason: fmt.Sprintf("year %d is outside 0–9999", y)}
	}
	return nil
}

// parseTime reads exactly what formatTime writes.
func parseTime(s, pointer string) (time.Time, error) {
	t, err := time.Parse(timeLayout, s)
	if err != nil || formatTime(t) != s {
		return time.Time{}, &InvalidError{Pointer: pointer, Reason: fmt.Sprintf("%q is not a time written as YYYY-MM-DDTHH:MM:SS.sssZ", s)}
	}
	return t, nil
}

// sameInstant compares times as the journal keeps them.
func sameInstant(a, b time.Time) bool { return formatTime(a) == formatTime(b) }

// checkRunID refuses a run id that is empty, too long, not well-formed
// UTF-8 or holds control characters (it is a key in every adapter and
// part of every turn id).
func checkRunID(runID string, lim Limits) error {
	switch {
	case runID == "":
		return &InvalidError{Pointer: "/runId", Reason: "run id is empty"}
	case len(runID) > lim.MaxRunIDBytes:
		return &TooLargeError{What: "run id", RunID: runID[:lim.MaxRunIDBytes], Size: int64(len(runID)), Limit: int64(lim.MaxRunIDBytes)}
	case !utf8.ValidString(runID):
		return &InvalidError{Pointer: "/runId", Reason: "run id is not well-formed UTF-8"}
	case strings.ContainsFunc(runID, func(r rune) bool { return r < 0x20 || r == 0x7f }):
		return &InvalidError{Pointer: "/runId", Reason: "run id holds a control character"}
	}
	return nil
}

// The wire shapes, as the reference writes them.

type usageWire struct {
	TokensIn  *int64   `json:"tokensIn,omitzero"`
	TokensOut *int64   `json:"tokensOut,omitzero"`
	CostUSD   *float64 `json:"costUsd,omitzero"`
	LatencyMS *float64 `json:"latencyMs,omitzero"`
	Model     *string  `json:"model,omitzero"`
}

type turnWire struct {
	Index     int64      `json:"index"`
	Speaker   string     `json:"speaker"`
	TurnID    string     `json:"turnId"`
	SessionID *string    `json:"sessionId,omitzero"`
	Text      string     `json:"text"`
	Usage     *usageWire `json:"usage,omitzero"`
	Attempts  int64      `json:"attempts"`
	StartedAt string     `json:"startedAt"`
	EndedAt   string     `json:"endedAt"`
}

type haltWire struct {
	Kind        string   `json:"kind"`
	Turns       *int64   `json:"turns,omitzero"`
	SpentCents  *float64 `json:"spentCents,omitzero"`
	CapCents    *float64 `json:"capCents,omitzero"`
	Reason      *string  `json:"reason,omitzero"`
	Participant *string  `json:"participant,omitzero"`
	Message     *string  `json:"message,omitzero"`
}

type recordWire struct {
	Kind      string    `json:"kind"`
	RunID     string    `json:"runId"`
	StartedAt *string   `json:"startedAt,omitzero"`
	Turn      *turnWire `json:"turn,omitzero"`
	Halted    *haltWire `json:"halted,omitzero"`
	EndedAt   *string   `json:"endedAt,omitzero"`
}

// Record kinds of the file journal.
const (
	kindBegin = "begin"
	kindTurn  = "turn"
	kindHalt  = "halt"
)

// record is one line of the file journal.
type record struct {
	kind      string
	runID     string
	startedAt time.Time // begin
	turn      Turn      // turn
	halt      Halt      // halt
	endedAt   time.Time // halt
}

// checkTurn validates t as a turn of runID; with derived it also
// requires t.TurnID to be TurnID(runID, t.Index, t.Speaker), which is
// checked on append but not on read (a slug of another Unicode version
// must not make a stored turn unreadable).
func checkTurn(runID string, t Turn, derived bool) error {
	const p = "/turn"
	switch {
	case t.Index < 0 || t.Index > 1<<53-1:
		return &InvalidError{Pointer: p + "/index", Reason: fmt.Sprintf("index %d is negative or too large", t.Index)}
	case t.Speaker == "":
		return &InvalidError{Pointer: p + "/speaker", Reason: "speaker is empty"}
	case t.TurnID == "":
		return &InvalidError{Pointer: p + "/turnId", Reason: "turn id is empty"}
	case derived && t.TurnID != TurnID(runID, t.Index, t.Speaker):
		return &InvalidError{Pointer: p + "/turnId", Reason: fmt.Sprintf("turn id %q is not %q", t.TurnID, TurnID(runID, t.Index, t.Speaker))}
	case t.Attempts < 1 || t.Attempts > 1<<53-1:
		return &InvalidError{Pointer: p + "/attempts", Reason: fmt.Sprintf("attempts %d is not a positive count", t.Attempts)}
	}
	if err := checkTime(t.StartedAt, p+"/startedAt"); err != nil {
		return err
	}
	if err := checkTime(t.EndedAt, p+"/endedAt"); err != nil {
		return err
	}
	if u := t.Usage; u != nil {
		for _, n := range []struct {
			name string
			v    *int64
		}{{"tokensIn", u.TokensIn}, {"tokensOut", u.TokensOut}} {
			if n.v != nil && (*n.v < 0 || *n.v > 1<<53-1) {
				return &InvalidError{Pointer: p + "/usage/" + n.name, Reason: fmt.Sprintf("%d is not a token count", *n.v)}
			}
		}
		for _, n := range []struct {
			name string
			v    *float64
		}{{"costUsd", u.CostUSD}, {"latencyMs", u.LatencyMS}} {
			if n.v != nil && (!canonjson.IsFinite(*n.v) || *n.v < 0) {
				return &InvalidError{Pointer: p + "/usage/" + n.name, Reason: fmt.Sprintf("%v is not a finite non-negative number", *n.v)}
			}
		}
	}
	return nil
}

func optString(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

func turnToWire(t Turn) *turnWire {
	w := &turnWire{
		Index: int64(t.Index), Speaker: t.Speaker, TurnID: t.TurnID, SessionID: optString(t.SessionID),
		Text: t.Text, Attempts: int64(t.Attempts), StartedAt: formatTime(t.StartedAt), EndedAt: formatTime(t.EndedAt),
	}
	if u := t.Usage; u != nil {
		w.Usage = &usageWire{TokensIn: u.TokensIn, TokensOut: u.TokensOut, CostUSD: u.CostUSD, LatencyMS: u.LatencyMS, Model: optString(u.Model)}
	}
	return w
}

func turnFromWire(w *turnWire) (Turn, error) {
	const p = "/turn"
	t := Turn{Index: int(w.Index), Speaker: w.Speaker, TurnID: w.TurnID, Text: w.Text, Attempts: int(w.Attempts)}
	if w.SessionID != nil {
		if *w.SessionID == "" {
			return Turn{}, &InvalidError{Pointer: p + "/sessionId", Reason: "session id is empty"}
		}
		t.SessionID = *w.SessionID
	}
	if u := w.Usage; u != nil {
		t.Usage = &Usage{TokensIn: u.TokensIn, TokensOut: u.TokensOut, CostUSD: u.CostUSD, LatencyMS: u.LatencyMS}
		if u.Model != nil {
			if *u.Model == "" {
				return Turn{}, &InvalidError{Pointer: p + "/usage/model", Reason: "model is empty"}
			}
			t.Usage.Model = *u.Model
		}
	}
	var err error
	if t.StartedAt, err = parseTime(w.StartedAt, p+"/startedAt"); err != nil {
		return Turn{}, err
	}
	if t.EndedAt, err = parseTime(w.EndedAt, p+"/endedAt"); err != nil {
		return Turn{}, err
	}
	return t, checkTurn("", t, false)
}

// haltFields are the members a halt may have besides its kind.
var haltFields = []string{"turns", "spentCents", "capCents", "reason", "participant", "message"}

// haltOwn returns the members a halt of kind has, or false for an
// unknown kind.
func haltOwn(kind HaltKind) ([]string, bool) {
	switch kind {
	case HaltMaxTurns:
		return []string{"turns"}, true
	case HaltMaxCredits:
		return []string{"spentCents", "capCents"}, true
	case HaltPredicate:
		return []string{"reason"}, true
	case HaltAbort:
		return nil, true
	case HaltParticipantError:
		return []string{"participant", "message"}, true
	}
	return nil, false
}

// checkHalt validates h: a known kind, none of the other kinds' fields
// set, and its numbers in range.
func checkHalt(h Halt) error {
	const p = "/halted"
	own, ok := haltOwn(h.Kind)
	if !ok {
		return &InvalidError{Pointer: p + "/kind", Reason: fmt.Sprintf("unknown halt kind %q", h.Kind)}
	}
	set := map[string]bool{
		"turns": h.Turns != 0, "spentCents": h.SpentCents != 0, "capCents": h.CapCents != 0,
		"reason": h.Reason != "", "participant": h.Participant != "", "message": h.Message != "",
	}
	for _, name := range haltFields {
		if set[name] && !slices.Contains(own, name) {
			return &InvalidError{Pointer: p + "/" + name, Reason: fmt.Sprintf("a %s halt has no %s", h.Kind, name)}
		}
	}
	if h.Turns < 0 || h.Turns > 1<<53-1 {
		return &InvalidError{Pointer: p + "/turns", Reason: fmt.Sprintf("%d is not a turn count", h.Turns)}
	}
	for _, n := range []struct {
		name string
		v    float64
	}{{"spentCents", h.SpentCents}, {"capCents", h.CapCents}} {
		if !canonjson.IsFinite(n.v) || n.v < 0 {
			return &InvalidError{Pointer: p + "/" + n.name, Reason: fmt.Sprintf("%v is not a finite non-negative number", n.v)}
		}
	}
	return nil
}

func haltToWire(h Halt) *haltWire {
	w := &haltWire{Kind: string(h.Kind)}
	switch h.Kind {
	case HaltMaxTurns:
		n := int64(h.Turns)
		w.Turns = &n
	case HaltMaxCredits:
		w.SpentCents, w.CapCents = &h.SpentCents, &h.CapCents
	case HaltPredicate:
		w.Reason = &h.Reason
	case HaltParticipantError:
		w.Participant, w.Message = &h.Participant, &h.Message
	}
	return w
}

func haltFromWire(w *haltWire) (Halt, error) {
	const p = "/halted"
	own, ok := haltOwn(HaltKind(w.Kind))
	if !ok {
		return Halt{}, &InvalidError{Pointer: p + "/kind", Reason: fmt.Sprintf("unknown halt kind %q", w.Kind)}
	}
	present := map[string]bool{
		"turns": w.Turns != nil, "spentCents": w.SpentCents != nil, "capCents": w.CapCents != nil,
		"reason": w.Reason != nil, "participant": w.Participant != nil, "message": w.Message != nil,
	}
	for _, name := range haltFields {
		switch mine := slices.Contains(own, name); {
		case mine && !present[name]:
			return Halt{}, &InvalidError{Pointer: p, Reason: fmt.Sprintf("a %s halt needs %s", w.Kind, name)}
		case !mine && present[name]:
			return Halt{}, &InvalidError{Pointer: p + "/" + name, Reason: fmt.Sprintf("a %s halt has no %s", w.Kind, name)}
		}
	}
	h := Halt{Kind: HaltKind(w.Kind)}
	if w.Turns != nil {
		h.Turns = int(*w.Turns)
	}
	if w.SpentCents != nil {
		h.SpentCents, h.CapCents = *w.SpentCents, *w.CapCents
	}
	if w.Reason != nil {
		h.Reason = *w.Reason
	}
	if w.Participant != nil {
		h.Participant, h.Message = *w.Participant, *w.Message
	}
	return h, checkHalt(h)
}

// fromValue decodes v into dst strictly, reporting an *InvalidError
// whose pointer starts with prefix.
func fromValue(v canonjson.Value, dst any, prefix string) error {
	if err := canonjson.FromValue(v, dst); err != nil {
		var ue *canonjson.UnmarshalError
		if errors.As(err, &ue) {
			return &InvalidError{Pointer: prefix + ue.Pointer, Reason: ue.Reason}
		}
		return &InvalidError{Pointer: prefix, Reason: err.Error()}
	}
	return nil
}

// canonical encodes w (a wire shape) as canonical JSON; a string without
// canonical form (a lone surrogate) is an *InvalidError at prefix.
func canonical(w any, prefix string) (canonjson.Value, []byte, error) {
	v, err := canonjson.ToValue(w)
	if err != nil {
		var me *canonjson.MarshalError
		if errors.As(err, &me) {
			return canonjson.Value{}, nil, &InvalidError{Pointer: prefix + me.Pointer, Reason: me.Reason}
		}
		return canonjson.Value{}, nil, &InvalidError{Pointer: prefix, Reason: err.Error()}
	}
	b, err := canonjson.Canonical(v)
	if err != nil {
		var ce *canonjson.CanonicalError
		if errors.As(err, &ce) {
			return canonjson.Value{}, nil, &InvalidError{Pointer: prefix + ce.Pointer, Reason: ce.Reason}
		}
		return canonjson.Value{}, nil, &InvalidError{Pointer: prefix, Reason: err.Error()}
	}
	return v, b, nil
}

// encodeTurn returns t's canonical JSON, the SQL payload and the unit of
// the size limits and of duplicate detection.
func encodeTurn(t Turn) (canonjson.Value, []byte, error) { return canonical(turnToWire(t), "/turn") }

// encodeHalt returns h's canonical JSON.
func encodeHalt(h Halt) ([]byte, error) {
	_, b, err := canonical(haltToWire(h), "/halted")
	return b, err
}

// decodeValue decodes stored JSON strictly, refusing what has no
// canonical form (a lone surrogate, a number that overflows), which the
// journal could not write back.
func decodeValue(data []byte, prefix string) (canonjson.Value, error) {
	v, err := canonjson.Decode(data)
	if err == nil {
		err = canonjson.Check(v)
	}
	if err != nil {
		return canonjson.Value{}, decodeError(err, prefix)
	}
	return v, nil
}

// decodeTurn reads a turn's JSON (an SQL payload).
func decodeTurn(data []byte) (Turn, error) {
	v, err := decodeValue(data, "/turn")
	if err != nil {
		return Turn{}, err
	}
	var w turnWire
	if err := fromValue(v, &w, "/turn"); err != nil {
		return Turn{}, err
	}
	return turnFromWire(&w)
}

// decodeHalt reads a halt's JSON (an SQL payload).
func decodeHalt(data []byte) (Halt, error) {
	v, err := decodeValue(data, "/halted")
	if err != nil {
		return Halt{}, err
	}
	var w haltWire
	if err := fromValue(v, &w, "/halted"); err != nil {
		return Halt{}, err
	}
	return haltFromWire(&w)
}

func decodeError(err error, prefix string) error {
	var de *canonjson.DecodeError
	if errors.As(err, &de) {
		return &InvalidError{Pointer: prefix + de.Pointer, Reason: de.Error()}
	}
	var ce *canonjson.CanonicalError
	if errors.As(err, &ce) {
		return &InvalidError{Pointer: prefix + ce.Pointer, Reason: ce.Reason}
	}
	return &InvalidError{Pointer: prefix, Reason: err.Error()}
}

// encodeRecord returns the file record for r.
func encodeRecord(r record) (canonjson.Value, error) {
	w := recordWire{Kind: r.kind, RunID: r.runID}
	switch r.kind {
	case kindBegin:
		s := formatTime(r.startedAt)
		w.StartedAt = &s
	case kindTurn:
		w.Turn = turnToWire(r.turn)
	case kindHalt:
		s := formatTime(r.endedAt)
		w.Halted, w.EndedAt = haltToWire(r.halt), &s
	}
	v, _, err := canonical(w, "")
	return v, err
}

// decodeRecord reads one file record strictly: a known kind with exactly
// its own members, each valid.
func decodeRecord(v canonjson.Value) (record, error) {
	if err := canonjson.Check(v); err != nil {
		return record{}, decodeError(err, "")
	}
	var w recordWire
	if err := fromValue(v, &w, ""); err != nil {
		return record{}, err
	}
	r := record{kind: w.Kind, runID: w.RunID}
	if w.RunID == "" || strings.ContainsFunc(w.RunID, func(r rune) bool { return r < 0x20 || r == 0x7f }) || !utf8.ValidString(w.RunID) {
		return record{}, &InvalidError{Pointer: "/runId", Reason: "run id is empty, ill-formed or holds a control character"}
	}
	has := map[string]bool{"startedAt": w.StartedAt != nil, "turn": w.Turn != nil, "halted": w.Halted != nil, "endedAt": w.EndedAt != nil}
	var own []string
	var err error
	switch w.Kind {
	case kindBegin:
		own = []string{"startedAt"}
		if w.StartedAt != nil {
			r.startedAt, err = parseTime(*w.StartedAt, "/startedAt")
		}
	case kindTurn:
		own = []string{"turn"}
		if w.Turn != nil {
			r.turn, err = turnFromWire(w.Turn)
		}
	case kindHalt:
		own = []string{"halted", "endedAt"}
		if w.Halted != nil && w.EndedAt != nil {
			if r.halt, err = haltFromWire(w.Halted); err == nil {
				r.endedAt, err = parseTime(*w.EndedAt, "/endedAt")
			}
		}
	default:
		return record{}, &InvalidError{Pointer: "/kind", Reason: fmt.Sprintf("unknown record kind %q", w.Kind)}
	}
	for _, name := range own {
		if !has[name] {
			return record{}, &InvalidError{Pointer: "", Reason: fmt.Sprintf("a %s record needs %s", w.Kind, name)}
		}
		delete(has, name)
	}
	for _, name := range []string{"startedAt", "turn", "halted", "endedAt"} {
		if has[name] {
			return record{}, &InvalidError{Pointer: "/" + name, Reason: fmt.Sprintf("a %s record has no %s", w.Kind, name)}
		}
	}
	if err != nil {
		return record{}, err
	}
	return r, nil
}
