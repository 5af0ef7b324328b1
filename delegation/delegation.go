package delegation

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/store"
)

// Kind is the store.Run kind of a delegation record.
const Kind = "delegation"

// IdempotencyScope is the store.Idempotency scope of delegation keys.
const IdempotencyScope = "delegation"

// Limits of a request.
const (
	// MaxIntentBytes bounds an intent.
	MaxIntentBytes = 64 << 10
	// MaxKeyLen bounds an idempotency key, which is 1 to MaxKeyLen
	// characters from A-Z, a-z, 0-9, '.', '_', ':' and '-'.
	MaxKeyLen = 128
	// MaxWaitSeconds bounds how long one call waits for a delegation to
	// end.
	MaxWaitSeconds = 600
	// MaxHistory bounds one history page; DefaultHistory is its default.
	MaxHistory     = 100
	DefaultHistory = 20
	// MaxFeedback bounds the feedback entries of one delegation, and
	// MaxNotesBytes the notes of one entry.
	MaxFeedback   = 32
	MaxNotesBytes = 4 << 10
	// MaxReasonBytes bounds a cancellation reason.
	MaxReasonBytes = 1 << 10
)

// State is a delegation's state: its run's store status.
type State = store.Status

// Delegation states.
const (
	StatePending     = store.StatusPending
	StateRunning     = store.StatusRunning
	StateCompleted   = store.StatusCompleted
	StateFailed      = store.StatusFailed
	StateCancelled   = store.StatusCancelled
	StateInterrupted = store.StatusInterrupted
)

// Budget is a delegation's conserved budget: token and iteration
// ceilings, and a cost ceiling in USD when there is one (null: the run
// has no USD ceiling).
type Budget struct {
	Tokens     int64    `json:"tokens"`
	Iterations int64    `json:"iterations"`
	USD        *float64 `json:"usd"`
}

// Delegation is one delegation as it is stored and reported. Unknown
// quantities are null, never 0.
type Delegation struct {
	// TaskID names the delegation (and its supervised run).
	TaskID string `json:"taskId"`
	State  State  `json:"state"`
	// Intent is what the manager was asked to deliver; RunID the
	// caller's correlation id, if it gave one.
	Intent string `json:"intent"`
	RunID  string `json:"runId,omitempty"`
	// IdempotencyKey is the key the delegation was submitted with, if
	// any; RequestDigest the canonical digest of the request as given.
	IdempotencyKey string `json:"idempotencyKey,omitempty"`
	RequestDigest  string `json:"requestDigest"`
	// Budget is the effective budget: the request's within the caps,
	// the caps where it named none.
	Budget    Budget    `json:"budget"`
	CreatedAt time.Time `json:"createdAt"`
	UpdatedAt time.Time `json:"updatedAt"`
	// StartedAt is when the first attempt began, EndedAt when the
	// delegation reached its terminal state (null before).
	StartedAt *time.Time `json:"startedAt"`
	EndedAt   *time.Time `json:"endedAt"`
	// Attempts counts the claims that ran it; Resumed says an attempt
	// continued an earlier one's journal.
	Attempts int  `json:"attempts"`
	Resumed  bool `json:"resumed"`
	// RunDir holds the supervised run's journal.
	RunDir string `json:"runDir"`
	// Result is how the supervised run ended (null until it returned).
	Result *Result `json:"result"`
	// Failure says why a failed or interrupted delegation has no
	// result, or what went wrong around it.
	Failure string `json:"failure,omitempty"`
	// Cancellation is set once the delegation was cancelled.
	Cancellation *Cancellation `json:"cancellation,omitempty"`
	// Feedback is every rating given, oldest first.
	Feedback []Feedback `json:"feedback"`
	// Claim is the current holder's claim while it runs.
	Claim *Claim `json:"claim,omitempty"`
	// TraceID is the trace of the delegation's supervised run and
	// ParentSpanID that run's root span (of its latest attempt), the
	// span everything the delegation did hangs under, as
	// Config.Observer's tracer gave them; Trace is the run's span tree
	// (its root and a span per worker, every attempt's, oldest first),
	// at most MaxTraceSpans, TraceTruncated when older ones were
	// dropped. All are absent when the run is not traced.
	TraceID        string      `json:"traceId,omitempty"`
	ParentSpanID   string      `json:"parentSpanId,omitempty"`
	Trace          []TraceSpan `json:"trace,omitempty"`
	TraceTruncated bool        `json:"traceTruncated,omitempty"`
}

// Result is how a delegation's supervised run ended (§3.6 result arms):
// status winner with the delivered output, or no-winner with the reason
// (and the brain's error for driver-failed).
type Result struct {
	Status string `json:"status"`
	// Out is the winning output's text; OutRef its content address
	// when it has one.
	Out    string `json:"out,omitempty"`
	OutRef string `json:"outRef,omitempty"`
	// OutTruncated says Out holds only the first MaxOutBytes of the
	// output; the whole of it is the blob OutRef names in the run dir.
	OutTruncated bool `json:"outTruncated,omitempty"`
	// Reason is the no-winner reason.
	Reason string     `json:"reason,omitempty"`
	Error  *ErrorInfo `json:"error,omitempty"`
	// Workers counts the workers spawned, Down those that failed or
	// were cancelled.
	Workers int `json:"workers"`
	Down    int `json:"down"`
	// SpentTotal is the run's whole spend.
	SpentTotal Spent `json:"spentTotal"`
	// SpendGaps names the nodes whose spend is not fully known.
	SpendGaps []string `json:"spendGaps,omitempty"`
}

// ErrorInfo is a failed manager brain's error.
type ErrorInfo struct {
	Name    string `json:"name"`
	Message string `json:"message"`
}

// Spent is a spend: null where it is not known (the amount charged for
// it, ceilings included, is in Charged). MS is the wall clock from the
// run's original start.
type Spent struct {
	Tokens     *int64   `json:"tokens"`
	Iterations *int64   `json:"iterations"`
	USD        *float64 `json:"usd"`
	MS         int64    `json:"ms"`
	Charged    Charged  `json:"charged"`
}

// Charged is what the pool charged, measured or at ceilings.
type Charged struct {
	Tokens     int64   `json:"tokens"`
	Iterations int64   `json:"iterations"`
	USD        float64 `json:"usd"`
}

// Cancellation records a cancel request.
type Cancellation struct {
	At     time.Time `json:"at"`
	Reason string    `json:"reason,omitempty"`
	// From is the state the delegation was cancelled from.
	From State `json:"from"`
}

// Feedback is one rating of a delegation (delegate_feedback).
type Feedback struct {
	Score float64 `json:"score"`
	Label string  `json:"label,omitempty"`
	Notes string  `json:"notes"`
	// By is agent, user or downstream-judge.
	By string    `json:"by"`
	At time.Time `json:"at"`
}

// Claim is a running delegation's holder and when its claim lapses
// unless renewed.
type Claim struct {
	Owner string    `json:"owner"`
	Until time.Time `json:"until"`
}

// Refusal codes.
const (
	CodeInvalidArguments    = "invalid-arguments"
	CodeBudgetOverCap       = "budget-over-cap"
	CodeIdempotencyConflict = "idempotency-conflict"
	CodeUnknownDelegation   = "unknown-delegation"
	CodeQueueFull           = "queue-full"
	CodeFeedbackFull        = "feedback-full"
	CodeClosed              = "queue-closed"
	// CodeStoreFailed: the queue's store failed; it takes nothing new
	// until it is restarted (StoreFailedError).
	CodeStoreFailed = "store-failed"
)

// Refusal is a request the queue does not take: Code says which rule,
// Path is the JSON pointer of the argument at fault ("" for the request
// as a whole), Reason says what to do.
type Refusal struct {
	Code   string `json:"error"`
	Reason string `json:"reason"`
	Path   string `json:"path,omitempty"`
}

// Error describes the refusal.
func (r *Refusal) Error() string {
	if r.Path == "" {
		return fmt.Sprintf("delegation: %s: %s", r.Code, r.Reason)
	}
	return fmt.Sprintf("delegation: %s at %s: %s", r.Code, r.Path, r.Reason)
}

func refuse(code, path, format string, args ...any) *Refusal {
	return &Refusal{Code: code, Path: path, Reason: fmt.Sprintf(format, args...)}
}

// CorruptRecordError is a delegation run whose document does not decode:
// the store holds something this package did not write.
type CorruptRecordError struct {
	TaskID string
	Err    error
}

func (e *CorruptRecordError) Error() string {
	return fmt.Sprintf("delegation: the record of %s does not decode: %v", e.TaskID, e.Err)
}

// Unwrap returns the decoding error.
func (e *CorruptRecordError) Unwrap() error { return e.Err }

// encodeDoc is d as a run document (the fields the run itself holds are
// left out).
func encodeDoc(d Delegation) (canonjson.Value, error) {
	d.TaskID, d.State, d.CreatedAt, d.UpdatedAt = "", "", time.Time{}, time.Time{}
	raw, err := json.Marshal(d)
	if err != nil {
		return canonjson.Value{}, err
	}
	v, err := canonjson.Decode(raw)
	if err != nil {
		return canonjson.Value{}, err
	}
	for _, name := range []string{"taskId", "state", "createdAt", "updatedAt"} {
		v = v.Without(name)
	}
	return v, nil
}

// decodeRun reads a delegation from its run.
func decodeRun(r store.Run) (Delegation, error) {
	var d Delegation
	if r.Kind != Kind {
		return d, &CorruptRecordError{TaskID: r.ID, Err: fmt.Errorf("the run is of kind %q, not %q", r.Kind, Kind)}
	}
	if r.Doc.Kind() != canonjson.Object {
		return d, &CorruptRecordError{TaskID: r.ID, Err: fmt.Errorf("the document is a JSON %s, not an object", r.Doc.Kind())}
	}
	if err := json.Unmarshal(canonjson.Marshal(r.Doc), &d); err != nil {
		return d, &CorruptRecordError{TaskID: r.ID, Err: err}
	}
	d.TaskID, d.State, d.CreatedAt, d.UpdatedAt = r.ID, r.Status, r.CreatedAt, r.UpdatedAt
	if d.Feedback == nil {
		d.Feedback = []Feedback{}
	}
	return d, nil
}
