package supervise

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/internal/regularfile"
	"github.com/agentrt/agentrt/kernel"
)

// The cross-process control files of a run directory (§3.6 "Supervisor
// run layout"). Another process with trusted access to the run dir
// writes requests; the running Supervise picks them up on its control
// scan and writes the acknowledgements.
const (
	SteerRequestsDir      = "steers/requests"
	SteerAcksDir          = "steers/acks"
	CancellationsDir      = "cancellations"
	CancelRequestsFile    = "cancellations/requests.ndjson"
	RunCancelRequestFile  = "cancellations/run.request.json"
	RunCancellationFile   = "cancellations/run.json"
	steerSchemaVersion    = 1
	maxSteerMessage       = 64 << 10
	maxOperationID        = 128
	defaultControlSource  = "filesystem"
	controlDeliverTimeout = 5 * time.Second
)

// ControlScanInterval is how often a running Supervise scans its run
// dir for steer and cancel requests (the spec's shared 100 ms fallback
// scan).
const ControlScanInterval = 100 * time.Millisecond

// SteerEffect is a steer acknowledgement's effect. Delivered proves the
// worker's inbox accepted the message — for a router manager, that its
// journaled transcript holds it — not that its model read it.
type SteerEffect string

// The five steer effects.
const (
	SteerUnknown     SteerEffect = "unknown"
	SteerDelivered   SteerEffect = "delivered"
	SteerNotLive     SteerEffect = "not_live"
	SteerUnsupported SteerEffect = "unsupported"
	SteerRefused     SteerEffect = "refused"
)

// Cancellation paths of a run cancellation acknowledgement. Supervise
// finds requests by its periodic scan, so it acknowledges path fallback.
const PathFallback = "fallback"

// ErrInvalidControl: a steer or cancel request is malformed (an empty or
// over-long operation id or message, a cancellation's text over
// MaxControlText, an operation id with characters outside
// [A-Za-z0-9._-]).
var ErrInvalidControl = errors.New("supervise: invalid control request")

// ErrNoRun: a steer or cancel request names a run directory that does
// not exist. Requests are never written into a directory they would
// create: nothing would ever read them. (A directory that exists but
// holds no run yet takes the request, which stays unknown until a run
// there resolves it: behaviour 49.)
var ErrNoRun = errors.New("supervise: no such run directory")

// requireRun refuses a control request to a run directory that does not
// exist, rather than create it and answer for a run that never was.
func requireRun(runDir string) error {
	st, err := os.Stat(runDir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("%w: %s (check the path, or the run's --run-id and --workspace)", ErrNoRun, runDir)
	case err != nil:
		return fmt.Errorf("supervise: reading run dir %s: %w", runDir, err)
	case !st.IsDir():
		return fmt.Errorf("%w: %s is not a directory", ErrNoRun, runDir)
	}
	return nil
}

// endedBefore reports whether the run in runDir had ended (its state.json
// holds its final status) before a request written at (Unix ms), and
// when its state was last written: no supervisor will ever read such a
// request (spec §3.6: run end expires open requests), so it is answered
// not_live rather than unknown forever.
func endedBefore(runDir string, at int64) (bool, int64) {
	var st RunState
	if readJSON(filepath.Join(runDir, StateFile), &st) != nil {
		return false, 0
	}
	switch st.Status {
	case "", RunStatusRunning, "unknown":
		return false, 0
	}
	return st.UpdatedAtMS > 0 && st.UpdatedAtMS <= at, st.UpdatedAtMS
}

// endedDetail is the acknowledgement of a request to worker ref of a
// run that had ended before the request was written: not live, unless
// the run's journal shows it never had a worker ref names (nor is ref
// the run itself) — then the answer the running supervisor gives a
// request to no worker (unknownEffect, "the run has no worker …"), so a
// mistyped name is not taken for a settled worker.
func endedDetail[E ~string](ctx context.Context, runDir, ref string, notLive, unknownEffect E) (E, string) {
	const ended = "the run had ended before the request was written"
	if _, ok, err := ResolveWorker(ctx, runDir, ref); err == nil && !ok {
		var st RunState
		if readJSON(filepath.Join(runDir, StateFile), &st) == nil && st.RunID != ref {
			return unknownEffect, ended + "; the run has no worker " + ref
		}
	}
	return notLive, ended
}

// ErrUnknownOperation: no request with the operation id was written.
var ErrUnknownOperation = errors.New("supervise: unknown operation id")

// ConflictError: an operation id was already used for a different
// request; nothing was written (the first admitted request wins).
type ConflictError struct {
	Kind        string // steer, worker-cancel, run-cancel
	OperationID string
	Detail      string
}

func (e *ConflictError) Error() string {
	return fmt.Sprintf("supervise: %s operation %q conflicts with the request already written: %s", e.Kind, e.OperationID, e.Detail)
}

// WorkerSteer is what WriteWorkerSteer asks for. Source defaults to
// "filesystem".
type WorkerSteer struct {
	OperationID string
	Message     string
	Source      string
	Interrupt   bool
}

// SteerRequest is one published steer request file.
type SteerRequest struct {
	SchemaVersion int    `json:"schemaVersion"`
	OperationID   string `json:"operationId"`
	RequestDigest string `json:"requestDigest"`
	// At is when the request was first written, in Unix milliseconds.
	At        int64  `json:"at"`
	Source    string `json:"source"`
	Worker    string `json:"worker"`
	Message   string `json:"message"`
	Interrupt bool   `json:"interrupt"`
}

// SteerAck is the running supervisor's acknowledgement of a steer
// request; times are Unix milliseconds.
type SteerAck struct {
	OperationID   string      `json:"operationId"`
	RequestDigest string      `json:"requestDigest"`
	Worker        string      `json:"worker"`
	Effect        SteerEffect `json:"effect"`
	RequestedAt   int64       `json:"requestedAt"`
	ObservedAt    int64       `json:"observedAt"`
	Detail        string      `json:"detail,omitzero"`
}

func validOperationID(id string) error {
	if id == "" || len(id) > maxOperationID {
		return fmt.Errorf("%w: operation id must be 1..%d characters", ErrInvalidControl, maxOperationID)
	}
	for _, r := range id {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '.' || r == '_' || r == '-') {
			return fmt.Errorf("%w: operation id %q has a character outside [A-Za-z0-9._-]", ErrInvalidControl, id)
		}
	}
	// A worker cancellation's record is cancellations/<id>.json (spec
	// §13's layout), beside the run's own run.json and run.request.json:
	// an id naming either would be read as the run's cancellation.
	if id[0] == '.' || id == "run" || id == "requests" || strings.HasPrefix(id, "run.") {
		return fmt.Errorf("%w: operation id %q is reserved (ids \"run\", \"requests\" and \"run.*\" name the run's own files)", ErrInvalidControl, id)
	}
	return nil
}

func opHash(id string) string {
	sum := sha256.Sum256([]byte(id))
	return hex.EncodeToString(sum[:])
}

// errSteerDigestMismatch: a steer request file's body is not the one
// its requestDigest was computed over.
var errSteerDigestMismatch = errors.New("its requestDigest does not match its body")

func steerDigest(r SteerRequest) (string, error) {
	v, err := canonjson.ToValue(struct {
		OperationID string `json:"operationId"`
		Worker      string `json:"worker"`
		Message     string `json:"message"`
		Source      string `json:"source"`
		Interrupt   bool   `json:"interrupt"`
	}{r.OperationID, r.Worker, r.Message, r.Source, r.Interrupt})
	if err != nil {
		return "", err
	}
	return canonjson.Digest(v)
}

// checkSteerMessage holds a steer's message, whichever channel it comes
// by, to 1..maxSteerMessage bytes of UTF-8.
func checkSteerMessage(m string) error {
	if m == "" || len(m) > maxSteerMessage || !utf8.ValidString(m) {
		return fmt.Errorf("must be 1..%d bytes of UTF-8 (it has %d)", maxSteerMessage, len(m))
	}
	return nil
}

// WriteWorkerSteer atomically publishes a steer request for worker (a
// node id, a direct child's label or profile name, or the run id for the
// manager itself) in runDir, for the run's supervisor to deliver. The
// same operation id with the same body returns the request first written
// (its At included); with another body it fails with *ConflictError
// (§15 behaviour 48). ReadSteerAck reads the outcome.
func WriteWorkerSteer(ctx context.Context, runDir, worker string, s WorkerSteer) (SteerRequest, error) {
	if err := ctx.Err(); err != nil {
		return SteerRequest{}, err
	}
	if err := validOperationID(s.OperationID); err != nil {
		return SteerRequest{}, err
	}
	switch {
	case worker == "":
		return SteerRequest{}, fmt.Errorf("%w: no worker named", ErrInvalidControl)
	}
	if err := checkSteerMessage(s.Message); err != nil {
		return SteerRequest{}, fmt.Errorf("%w: the message %w", ErrInvalidControl, err)
	}
	if err := requireRun(runDir); err != nil {
		return SteerRequest{}, err
	}
	source := s.Source
	if source == "" {
		source = defaultControlSource
	}
	req := SteerRequest{SchemaVersion: steerSchemaVersion, OperationID: s.OperationID, At: time.Now().UnixMilli(), Source: source,
		Worker: worker, Message: s.Message, Interrupt: s.Interrupt}
	var err error
	if req.RequestDigest, err = steerDigest(req); err != nil {
		return SteerRequest{}, fmt.Errorf("supervise: steer digest: %w", err)
	}
	path := filepath.Join(runDir, SteerRequestsDir, opHash(s.OperationID)+".json")
	created, err := writeExclusive(path, req)
	if err != nil {
		return SteerRequest{}, fmt.Errorf("supervise: publishing steer %s: %w", s.OperationID, err)
	}
	if created {
		return req, nil
	}
	var prior SteerRequest
	if err := readJSON(path, &prior); err != nil {
		return SteerRequest{}, fmt.Errorf("supervise: reading steer %s: %w", s.OperationID, err)
	}
	if prior.OperationID != req.OperationID || prior.RequestDigest != req.RequestDigest {
		return SteerRequest{}, &ConflictError{Kind: "steer", OperationID: s.OperationID, Detail: "request digest " + prior.RequestDigest + " was written first"}
	}
	// The file's digest is only a claim about its body: a body changed
	// after it was published (its digest kept) is not the request that
	// won, and is never handed back as it (payload conflict fails closed).
	if d, err := steerDigest(prior); err != nil || d != prior.RequestDigest {
		return SteerRequest{}, &ControlFileError{Path: path, Err: errSteerDigestMismatch}
	}
	return prior, nil
}

// ReadSteerAck returns the acknowledgement of a steer request, or nil
// when the supervisor has not seen it yet.
func ReadSteerAck(ctx context.Context, runDir, operationID string) (*SteerAck, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if err := validOperationID(operationID); err != nil {
		return nil, err
	}
	var ack SteerAck
	err := readJSON(filepath.Join(runDir, SteerAcksDir, opHash(operationID)+".json"), &ack)
	if errors.Is(err, fs.ErrNotExist) {
		var req SteerRequest
		if readJSON(filepath.Join(runDir, SteerRequestsDir, opHash(operationID)+".json"), &req) == nil {
			if ended, at := endedBefore(runDir, req.At); ended {
				effect, detail := endedDetail(ctx, runDir, req.Worker, SteerNotLive, SteerRefused)
				return &SteerAck{OperationID: req.OperationID, RequestDigest: req.RequestDigest, Worker: req.Worker, Effect: effect,
					RequestedAt: req.At, ObservedAt: at, Detail: detail}, nil
			}
		}
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("supervise: reading steer ack %s: %w", operationID, err)
	}
	if ack.OperationID == "" {
		// The refusal of a request that did not read names no operation:
		// its file, named by the operation's hash, is this one's.
		ack.OperationID = operationID
	}
	return &ack, nil
}

// CancelOptions are a worker cancellation's optional fields. Source
// defaults to "filesystem".
type CancelOptions struct {
	Reason, Source string
}

// CancelRequest is one line of cancellations/requests.ndjson.
type CancelRequest struct {
	OperationID string `json:"operationId"`
	Worker      string `json:"worker"`
	Reason      string `json:"reason,omitzero"`
	Source      string `json:"source"`
	At          int64  `json:"at"`
}

// firstAsked says what the request first written under r's operation
// id asked: a conflict names the body that won, whichever part differs.
func (r CancelRequest) firstAsked() string {
	return fmt.Sprintf("worker %s (reason %q, source %s) was asked first", r.Worker, r.Reason, r.Source)
}

func (r CancelRequest) sameBody(o CancelRequest) bool {
	return r.OperationID == o.OperationID && r.Worker == o.Worker && r.Reason == o.Reason && r.Source == o.Source
}

// WorkerCancellation is the record of one worker cancellation. Effect
// is unknown until the supervisor resolved the request (and stays
// unknown when the run ended before termination was observed: never
// success), cancel_requested once the abort was issued, cancelled once
// the worker's terminal down state was observed, not_live when the
// worker had already settled (or settled done despite the abort, or the
// run ended before the request was applied). Terminated lists the nodes
// of the cancelled subtree proven down since the abort was issued.
type WorkerCancellation struct {
	OperationID string        `json:"operationId"`
	Worker      string        `json:"worker"`
	Effect      kernel.Effect `json:"effect"`
	RequestedAt int64         `json:"requestedAt"`
	ObservedAt  int64         `json:"observedAt,omitzero"`
	WorkerID    NodeID        `json:"workerId,omitzero"`
	Reason      string        `json:"reason,omitzero"`
	Detail      string        `json:"detail,omitzero"`
	Terminated  []NodeID      `json:"terminated"`
}

// CancelWorker asks the run in runDir to cancel worker (a node id at any
// depth, or a direct child's label or profile name) and its subtree. It
// is retry-safe: repeating the operation id appends nothing and returns
// the operation's current record; a different worker, reason or source
// under the same id fails with *ConflictError (§15 behaviour 49).
func CancelWorker(ctx context.Context, runDir, worker, operationID string, o CancelOptions) (WorkerCancellation, error) {
	if err := ctx.Err(); err != nil {
		return WorkerCancellation{}, err
	}
	if err := validOperationID(operationID); err != nil {
		return WorkerCancellation{}, err
	}
	if worker == "" {
		return WorkerCancellation{}, fmt.Errorf("%w: no worker named", ErrInvalidControl)
	}
	for _, t := range [][2]string{{"reason", o.Reason}, {"source", o.Source}} {
		if err := checkControlText(t[0], t[1]); err != nil {
			return WorkerCancellation{}, err
		}
	}
	if err := requireRun(runDir); err != nil {
		return WorkerCancellation{}, err
	}
	source := o.Source
	if source == "" {
		source = defaultControlSource
	}
	req := CancelRequest{OperationID: operationID, Worker: worker, Reason: o.Reason, Source: source, At: time.Now().UnixMilli()}
	prior, err := readCancelRequests(runDir)
	if err != nil {
		return WorkerCancellation{}, err
	}
	if p, ok := prior[operationID]; ok {
		if !p.sameBody(req) {
			return WorkerCancellation{}, &ConflictError{Kind: "worker-cancel", OperationID: operationID, Detail: p.firstAsked()}
		}
	} else {
		path := filepath.Join(runDir, CancelRequestsFile)
		if st, err := os.Stat(path); err == nil && st.Size()+int64(cancelLineBytes(req)) > MaxCancelRequestsBytes {
			return WorkerCancellation{}, &ControlFileError{Path: path, Size: st.Size(), Limit: MaxCancelRequestsBytes}
		}
		if err := appendLine(path, req); err != nil {
			return WorkerCancellation{}, fmt.Errorf("supervise: appending cancellation %s: %w", operationID, err)
		}
		// Another process may have appended the same id first; its line
		// is the one admitted.
		now, err := readCancelRequests(runDir)
		if err != nil {
			return WorkerCancellation{}, err
		}
		if p := now[operationID]; !p.sameBody(req) {
			return WorkerCancellation{}, &ConflictError{Kind: "worker-cancel", OperationID: operationID, Detail: p.firstAsked()}
		}
	}
	return ReadWorkerCancellation(ctx, runDir, operationID)
}

// ReadWorkerCancellation returns the record of a worker cancellation:
// the supervisor's, or effect unknown while it has not resolved the
// request. An operation id never requested is ErrUnknownOperation.
func ReadWorkerCancellation(ctx context.Context, runDir, operationID string) (WorkerCancellation, error) {
	if err := ctx.Err(); err != nil {
		return WorkerCancellation{}, err
	}
	if err := validOperationID(operationID); err != nil {
		return WorkerCancellation{}, err
	}
	var rec WorkerCancellation
	err := readJSON(filepath.Join(runDir, CancellationsDir, operationID+".json"), &rec)
	if err == nil && rec.OperationID == operationID {
		return rec, nil
	}
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return WorkerCancellation{}, fmt.Errorf("supervise: reading cancellation %s: %w", operationID, err)
	}
	reqs, err := readCancelRequests(runDir)
	if err != nil {
		return WorkerCancellation{}, err
	}
	r, ok := reqs[operationID]
	if !ok {
		return WorkerCancellation{}, fmt.Errorf("%w: %s", ErrUnknownOperation, operationID)
	}
	if ended, at := endedBefore(runDir, r.At); ended {
		effect, detail := endedDetail(ctx, runDir, r.Worker, kernel.EffectNotLive, kernel.EffectUnknown)
		return WorkerCancellation{OperationID: operationID, Worker: r.Worker, Effect: effect, RequestedAt: r.At, ObservedAt: at,
			Reason: r.Reason, Detail: detail, Terminated: []NodeID{}}, nil
	}
	return WorkerCancellation{OperationID: operationID, Worker: r.Worker, Effect: kernel.EffectUnknown, RequestedAt: r.At, Reason: r.Reason,
		Detail: "not yet resolved by the run", Terminated: []NodeID{}}, nil
}

// readCancelRequests reads the requests log tolerantly: a torn or
// corrupt line is skipped, and a repeated operation id collapses to its
// first line. The map holds the first request per id; order is lost, so
// callers needing order use readCancelRequestList.
func readCancelRequests(runDir string) (map[string]CancelRequest, error) {
	list, err := readCancelRequestList(runDir)
	if err != nil {
		return nil, err
	}
	out := make(map[string]CancelRequest, len(list))
	for _, r := range list {
		out[r.OperationID] = r
	}
	return out, nil
}

func readCancelRequestList(runDir string) ([]CancelRequest, error) {
	all, _, err := readCancelRequestsFrom(runDir, 0, true)
	if err != nil {
		return nil, err
	}
	seen := make(map[string]bool, len(all))
	out := all[:0]
	for _, r := range all {
		if seen[r.OperationID] {
			continue
		}
		seen[r.OperationID] = true
		out = append(out, r)
	}
	return out, nil
}

// RunCancelOptions are a run cancellation's optional fields. Deadline,
// when positive, is how soon the caller wants the cancellation applied;
// the acknowledgement says whether it was exceeded.
type RunCancelOptions struct {
	Source, Reason, Operator string
	Deadline                 time.Duration
}

// RunCancelRequest is cancellations/run.request.json.
type RunCancelRequest struct {
	OperationID string `json:"operationId"`
	At          int64  `json:"at"`
	Source      string `json:"source"`
	DeadlineMS  *int64 `json:"deadlineMs,omitzero"`
	Operator    string `json:"operator,omitzero"`
	Reason      string `json:"reason,omitzero"`
}

func (r RunCancelRequest) sameBody(o RunCancelRequest) bool {
	return r.OperationID == o.OperationID && r.Source == o.Source && r.Operator == o.Operator && r.Reason == o.Reason &&
		(r.DeadlineMS == nil) == (o.DeadlineMS == nil) && (r.DeadlineMS == nil || *r.DeadlineMS == *o.DeadlineMS)
}

// RunCancellation is cancellations/run.json, the run's acknowledgement:
// cancel_requested once the abort was issued, then cancelled when every
// worker was seen to end, unknown (Affected names the workers whose end
// was not confirmed) otherwise, or not_live when the run settled before
// applying the request. AppliedAfterMS is how long after the request the
// abort was issued; DeadlineExceeded is set only when the request had a
// deadline. ObservedAt is when the run answered; 0 (omitted) in a record
// no run wrote — the CLI's answer for a request nobody acknowledged.
type RunCancellation struct {
	OperationID      string        `json:"operationId"`
	Effect           kernel.Effect `json:"effect"`
	Path             string        `json:"path,omitzero"`
	RequestedAt      int64         `json:"requestedAt"`
	ObservedAt       int64         `json:"observedAt,omitzero"`
	AppliedAfterMS   *int64        `json:"appliedAfterMs,omitzero"`
	DeadlineExceeded *bool         `json:"deadlineExceeded,omitzero"`
	Affected         []NodeID      `json:"affected,omitzero"`
	Source           string        `json:"source"`
	Reason           string        `json:"reason,omitzero"`
	Detail           string        `json:"detail,omitzero"`
}

// CancelRun asks the run in runDir to cancel. The first request wins:
// repeating it returns the request first written, a different request
// (another operation id or body) fails with *ConflictError (§15
// behaviour 50) — except a request under another operation id written
// after the run ended, which fails with *RunEndedError (not_live).
// ReadRunCancellation reads the acknowledgement.
func CancelRun(ctx context.Context, runDir, operationID string, o RunCancelOptions) (RunCancelRequest, error) {
	if err := ctx.Err(); err != nil {
		return RunCancelRequest{}, err
	}
	if err := validOperationID(operationID); err != nil {
		return RunCancelRequest{}, err
	}
	if o.Deadline < 0 {
		return RunCancelRequest{}, fmt.Errorf("%w: a negative deadline", ErrInvalidControl)
	}
	for _, t := range [][2]string{{"reason", o.Reason}, {"operator", o.Operator}, {"source", o.Source}} {
		if err := checkControlText(t[0], t[1]); err != nil {
			return RunCancelRequest{}, err
		}
	}
	if err := requireRun(runDir); err != nil {
		return RunCancelRequest{}, err
	}
	source := o.Source
	if source == "" {
		source = defaultControlSource
	}
	req := RunCancelRequest{OperationID: operationID, At: time.Now().UnixMilli(), Source: source, Operator: o.Operator, Reason: o.Reason}
	if o.Deadline > 0 {
		ms := o.Deadline.Milliseconds()
		req.DeadlineMS = &ms
	}
	path := filepath.Join(runDir, RunCancelRequestFile)
	// A request file damaged by another writer was never acted on (the
	// supervisor skips what it cannot read): it is set aside, kept for
	// inspection, and this request published in its place, rather than
	// leave the run impossible to cancel.
	for attempt := 0; ; attempt++ {
		created, err := writeExclusive(path, req)
		if err != nil {
			return RunCancelRequest{}, fmt.Errorf("supervise: publishing run cancellation: %w", err)
		}
		if created {
			return req, nil
		}
		var prior RunCancelRequest
		err = readJSON(path, &prior)
		if err == nil {
			if err = validOperationID(prior.OperationID); err != nil {
				err = &ControlFileError{Path: path, Limit: MaxControlFileBytes, Err: err}
			}
		}
		var damaged *ControlFileError
		switch {
		case errors.As(err, &damaged) && damaged.Err != nil && attempt == 0:
			if err := setAside(path); err != nil {
				return RunCancelRequest{}, fmt.Errorf("supervise: setting a damaged run cancellation aside: %w", err)
			}
			continue
		case errors.Is(err, fs.ErrNotExist) && attempt == 0:
			continue // set aside by a concurrent CancelRun: publish again
		case err != nil:
			return RunCancelRequest{}, fmt.Errorf("supervise: reading run cancellation: %w", err)
		case prior.OperationID != operationID:
			// A run holds one cancellation. Once the run has ended a
			// request under another id is not a conflict to fix but a
			// request for a run that is not live (as a worker cancel or
			// steer written after the end is answered not_live).
			if ended, at := endedBefore(runDir, req.At); ended {
				var st RunState
				_ = readJSON(filepath.Join(runDir, StateFile), &st)
				return RunCancelRequest{}, &RunEndedError{OperationID: operationID, FirstOperationID: prior.OperationID, Status: st.Status, EndedAtMS: at}
			}
			return RunCancelRequest{}, &ConflictError{Kind: "run-cancel", OperationID: operationID,
				Detail: "the run's cancellation was already requested under operation " + prior.OperationID + " (read its outcome under that operation id)"}
		case !prior.sameBody(req):
			return RunCancelRequest{}, &ConflictError{Kind: "run-cancel", OperationID: operationID, Detail: "operation " + prior.OperationID + " was written first"}
		}
		return prior, nil
	}
}

// RunEndedError: a run cancellation under a new operation id was asked
// of a run that had already ended (and whose one cancellation request is
// another operation's). Its effect is not_live: nothing was written, and
// the run's cancellation stays FirstOperationID's (ReadRunCancellation).
type RunEndedError struct {
	OperationID      string
	FirstOperationID string
	// Status is the run's final status in state.json.
	Status string
	// EndedAtMS is when the run ended (state.json's last write), Unix ms.
	EndedAtMS int64
}

func (e *RunEndedError) Error() string {
	return fmt.Sprintf("supervise: run cancellation %s: not_live: the run had ended (%s) before the request was written; its cancellation was operation %s",
		e.OperationID, e.Status, e.FirstOperationID)
}

// Effect is the request's effect: not_live, never success.
func (e *RunEndedError) Effect() kernel.Effect { return kernel.EffectNotLive }

// setAside renames the damaged file at path to path.damaged-<Unix ms>;
// one already moved by another process is no error.
func setAside(path string) error {
	err := os.Rename(path, fmt.Sprintf("%s.damaged-%d", path, time.Now().UnixMilli()))
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	return err
}

// ReadRunCancellation returns the run's cancellation acknowledgement, or
// nil when there is none yet.
func ReadRunCancellation(ctx context.Context, runDir string) (*RunCancellation, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	var ack RunCancellation
	err := readJSON(filepath.Join(runDir, RunCancellationFile), &ack)
	if errors.Is(err, fs.ErrNotExist) {
		var req RunCancelRequest
		if readJSON(filepath.Join(runDir, RunCancelRequestFile), &req) == nil {
			if ended, at := endedBefore(runDir, req.At); ended {
				return &RunCancellation{OperationID: req.OperationID, Effect: kernel.EffectNotLive, RequestedAt: req.At, ObservedAt: at,
					Source: req.Source, Reason: req.Reason, Detail: "the run had ended before the request was written"}, nil
			}
		}
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("supervise: reading the run cancellation: %w", err)
	}
	return &ack, nil
}

// writeExclusive writes v as JSON to path unless path exists, atomically:
// a reader sees the whole file or none. It reports whether it created
// the file.
func writeExclusive(path string, v any) (bool, error) {
	tmp, err := writeTemp(path, v)
	if err != nil {
		return false, err
	}
	defer os.Remove(tmp)
	if err := os.Link(tmp, path); err != nil {
		if errors.Is(err, fs.ErrExist) {
			return false, nil
		}
		return false, err
	}
	return true, syncDir(filepath.Dir(path))
}

// syncDir makes a new name in dir durable.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	return err
}

// writeReplace atomically replaces path with v as JSON.
func writeReplace(path string, v any) error {
	tmp, err := writeTemp(path, v)
	if err != nil {
		return err
	}
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		return err
	}
	return syncDir(filepath.Dir(path))
}

func writeTemp(path string, v any) (string, error) {
	data, err := json.Marshal(v)
	if err != nil {
		return "", err
	}
	return writeTempBytes(path, data, true)
}

// writeTempBytes writes data to a new temporary file beside path, synced
// when sync is set, and returns its name for the caller to rename or link
// into place.
func writeTempBytes(path string, data []byte, sync bool) (string, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return "", err
	}
	f, err := os.CreateTemp(filepath.Dir(path), ".tmp-*")
	if err != nil {
		return "", err
	}
	_, werr := f.Write(data)
	if werr == nil && sync {
		werr = f.Sync()
	}
	if cerr := f.Close(); werr == nil {
		werr = cerr
	}
	if werr != nil {
		os.Remove(f.Name())
		return "", werr
	}
	return f.Name(), nil
}

func readJSON(path string, v any) error {
	data, err := readBounded(path, MaxControlFileBytes)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(data, v); err != nil {
		return &ControlFileError{Path: path, Size: int64(len(data)), Limit: MaxControlFileBytes, Err: err}
	}
	return nil
}

// appendLine appends v as one JSON line with a single write and syncs
// it. A torn line a crashed writer left is closed first, so it cannot
// swallow this one.
func appendLine(path string, v any) error {
	data, err := json.Marshal(v)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return err
	}
	f, st, err := regularfile.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return err
	}
	if st.Size() > 0 {
		last := make([]byte, 1)
		if _, err := f.ReadAt(last, st.Size()-1); err == nil && last[0] != '\n' {
			data = append([]byte("\n"), data...)
		}
	}
	_, werr := f.Write(append(data, '\n'))
	if werr == nil {
		werr = f.Sync()
	}
	if cerr := f.Close(); werr == nil {
		werr = cerr
	}
	return werr
}

// listSteerRequests returns the steer request files of runDir in name
// order.
func listSteerRequests(runDir string) ([]string, error) {
	ents, err := os.ReadDir(filepath.Join(runDir, SteerRequestsDir))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []string
	for _, e := range ents {
		if n := e.Name(); !e.IsDir() && strings.HasSuffix(n, ".json") && !strings.HasPrefix(n, ".") {
			out = append(out, n)
		}
	}
	slices.Sort(out)
	return out, nil
}
