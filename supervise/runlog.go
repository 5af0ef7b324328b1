package supervise

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/contract"
	"github.com/agentrt/agentrt/internal/regularfile"
	"github.com/agentrt/agentrt/journal"
	"github.com/agentrt/agentrt/kernel"
	"github.com/agentrt/agentrt/ledger"
)

// Files of a run directory (§3.6 "Persistence & resume").
const (
	// SpawnJournalFile is the run's append-only journal of state changes.
	SpawnJournalFile = "spawn-journal.jsonl"
	// BlobsDir holds one content-addressed JSON file per settled result,
	// named sha256-<hex>.json.
	BlobsDir = "blobs"
	// CoordinationLogFile holds questions, answer decisions and analyst
	// findings: evidence. A resumed run reads its questions back from it
	// (replayQuestions: ids, statuses, and the one re-offer a nested
	// manager it drives again is owed); nothing else in it is delivered
	// again.
	CoordinationLogFile = "coordination-log.jsonl"
)

// CoordRecord is one line of the coordination log: a question asked
// (Kind "question"), a decision on one (Kind "decision"), or an
// analyst's findings (Kind "finding"). The log is evidence: a resumed
// run reads its questions back (replayQuestions), and nothing else in it
// is delivered again.
type CoordRecord struct {
	Kind       string         `json:"kind"`
	QuestionID string         `json:"questionId,omitzero"`
	Question   *Question      `json:"question,omitzero"`
	Decision   *Decision      `json:"decision,omitzero"`
	Delivered  bool           `json:"delivered,omitzero"`
	Finding    *FindingRecord `json:"finding,omitzero"`
	// Escalation is an escalation record's (Kind "escalation"): a
	// question that left the run's root manager, and what became of it.
	Escalation *EscalationRecord `json:"escalation,omitzero"`
	// Mail is a peer mail attempt's (Kind "mail", Options.PeerMail):
	// delivered or refused.
	Mail *MailRecord `json:"mail,omitzero"`
}

// Coordination log record kinds.
const (
	CoordQuestion = "question"
	CoordDecision = "decision"
	CoordFinding  = "finding"
	// CoordEscalation is a question the run's root manager escalated
	// (Options.EscalateQuestion), record-only.
	CoordEscalation = "escalation"
	// CoordMail is one peer mail attempt (Options.PeerMail), delivered
	// or refused.
	CoordMail = "mail"
)

// Finding outcomes.
const (
	// FindingSettled: the analyst ran and settled; Findings is its
	// output (clipped to the lens's output limit), OutRef its blob.
	FindingSettled = "settled"
	// FindingNotRun: an analysis the journal recorded as requested never
	// started, and the resumed run could not start it either; Reason
	// says why.
	FindingNotRun = "not-run"
	// FindingDetected: an online detector (Options.WatchWorkers) tripped
	// on worker Source's live trace; Lens is OnlineLensPrefix and the
	// detector's kind, Findings the OnlineFinding as JSON. A resumed run
	// counts them against the worker's cap and raises none again.
	FindingDetected = "detected"
)

// FindingRecord is what the coordination log keeps of one analysis: lens
// Lens over worker Source, run as analyst worker Analyst.
type FindingRecord struct {
	Outcome  string `json:"outcome"`
	Lens     string `json:"lens"`
	Source   NodeID `json:"sourceWorkerId"`
	Analyst  NodeID `json:"analystWorkerId,omitzero"`
	State    State  `json:"state,omitzero"`
	Findings string `json:"findings,omitzero"`
	OutRef   string `json:"outRef,omitzero"`
	Reason   string `json:"reason,omitzero"`
}

// ReadCoordinationLog reads coordination-log.jsonl of run directory dir
// without locking it, tolerantly (a torn tail is ignored; a corrupt line
// or one that is not a CoordRecord is skipped and counted). A run that
// wrote none gives an error matching fs.ErrNotExist.
func ReadCoordinationLog(ctx context.Context, dir string) ([]CoordRecord, int, error) {
	return readTolerant[CoordRecord](ctx, filepath.Join(dir, CoordinationLogFile))
}

// Journal record kinds.
const (
	KindRunStarted = "run-started"
	KindSpawned    = "spawned"
	KindSettled    = "settled"
	KindSubmitted  = "submitted"
	KindFinished   = "finished"
	// KindEdge is a graph edge traversal (package graph's edge ledger),
	// appended through Coordinator.Note; replay passes it over.
	KindEdge = "edge"
	// KindGraph is a graph run's topology (package graph: its nodes'
	// profile digests and its edges), appended once through
	// Coordinator.Note so a resume can refuse another graph; replay
	// passes it over.
	KindGraph = "graph"
	// KindQuestionAsked and KindQuestionDecided are a question asked
	// (Node the asker, QuestionID, Question) and a decision on one
	// (Node the asker, QuestionID, Decision, Delivered), journaled only
	// when the spawn journal is not the run dir's file (a store's): the
	// run dir's coordination log holds them otherwise, and a run that
	// moves between machines takes them with its journal
	// (replayQuestions).
	KindQuestionAsked   = "question-asked"
	KindQuestionDecided = "question-decided"
	// KindQuestionEscalated is a question the root escalated
	// (Escalation), journaled so too.
	KindQuestionEscalated = "question-escalated"
	// KindFindingDetected is an online finding (CoordFinding,
	// FindingDetected: Node the watched worker, Label its lens, Reason
	// the OnlineFinding as JSON), journaled so too.
	KindFindingDetected = "finding-detected"
	// KindMail is a peer mail attempt (CoordMail) in a store journal:
	// Node its sender, Data its MailRecord.
	KindMail = "mail"
	// KindBreakerTripped is the restart-intensity breaker's trip
	// (Breaker; Node the worker whose down tripped it), and KindAborted
	// a caller's RootHandle.Abort (Reason): journaled before either is
	// acted on, so a resumed run stays aborted, its manager not driven
	// again.
	KindBreakerTripped = "breaker-tripped"
	KindAborted        = "aborted"
	// KindDeadlinePassed is the run's deadline ending its manager before
	// any abort or cancellation did: journaled when it happens, so a
	// resumed run that finds an abort or a run cancellation after it
	// still ends budget-exhausted (the first end decides, §3.6).
	KindDeadlinePassed = "deadline-passed"
	// KindProgressStopped is the run's StopRule ending it (Reason the
	// rule's, AtMS when): journaled before it is acted on, so a resumed
	// run stays ended by it, its manager not driven again (the first end
	// decides, §3.6).
	KindProgressStopped = "progress-stopped"
	// KindExtraToolCalled and KindExtraToolDone are a call of one of
	// the root manager's extra tools (Options.ExtraTools), or of a
	// manager's product tools (Options.ResolveSupervisorTools; Node the
	// nested manager's node, empty for the root), started — Key the tool
	// and the call's id, Label the tool — and its outcome (Data its
	// result, or Reason its error): a resumed manager's re-run call gets
	// the outcome back rather than acting again.
	KindExtraToolCalled = "extra-tool-called"
	KindExtraToolDone   = "extra-tool-done"
)

// Record is one line of the spawn journal. Kind says which fields are
// set: run-started (RunID, StartedAtMS, DeadlineMS, Task, the run's
// Budget, PerWorker and ManagerDigest), spawned
// (Node, Parent, Label, Profile, Model, Key, Task, the request's own
// Budget and the merged ceiling Reserved, and Continuity and ResumeOf
// when it resolved to resume), settled
// (Node, State, Spent, OutRef, Verdict, Delivered, Reason, CheckError,
// Infra), trace-unpropagated (Node, Reason), environment-teardown (Node, Provider, EnvironmentID,
// Destroyed, Reason the detail), teardown-unconfirmed (Node,
// Label, Runtime, State, Reason),
// submitted (OutRef, Verdict; Node a nested manager's, none the run's), finished (Outcome, Reason, and Result,
// the whole result a resume of the ended run returns), an analysis
// requested (Key, Label the lens, Node the analysed worker), a settlement
// hook done (Node), a note of a layer above (Kind edge: Node and
// Data), and a piece of a router manager's conversation (KindTranscript:
// Node the manager, Messages, and Spent, the spend of the model turn
// whose answer it holds), and, in a store journal, a question asked
// or decided (KindQuestionAsked, KindQuestionDecided). A settled record's Hook says Options.AfterSettle runs for it,
// and is done once an after-settle record follows.
type Record struct {
	Kind        string `json:"kind"`
	RunID       string `json:"runId,omitzero"`
	StartedAtMS int64  `json:"startedAtMs,omitzero"`
	DeadlineMS  int64  `json:"deadlineMs,omitzero"`
	Task        string `json:"task,omitzero"`
	Node        NodeID `json:"node,omitzero"`
	Parent      NodeID `json:"parent,omitzero"`
	Label       string `json:"label,omitzero"`
	Profile     string `json:"profile,omitzero"`
	// ProfileDigest and ProfileDoc are a spawn's authored profile: its
	// identity and canonical document (at most MaxAuthoredProfile bytes).
	ProfileDigest string          `json:"profileDigest,omitzero"`
	ProfileDoc    canonjson.Value `json:"profileDoc,omitzero"`
	Model         string          `json:"model,omitzero"`
	Key           string          `json:"key,omitzero"`
	Budget        *BudgetRecord   `json:"budget,omitzero"`
	Reserved      *BudgetRecord   `json:"reserved,omitzero"`
	State         State           `json:"state,omitzero"`
	Spent         *SpendRecord    `json:"spent,omitzero"`
	OutRef        string          `json:"outRef,omitzero"`
	Verdict       *kernel.Verdict `json:"verdict,omitzero"`
	Delivered     bool            `json:"delivered,omitzero"`
	Reason        string          `json:"reason,omitzero"`
	CheckError    string          `json:"checkError,omitzero"`
	Outcome       string          `json:"outcome,omitzero"`
	Hook          bool            `json:"hook,omitzero"`
	// Infra: a settled worker went down for an infrastructure reason
	// (NodeSettled.Infra).
	Infra bool `json:"infra,omitzero"`
	// Session: the provider session a settled worker left
	// (WorkResult.Session), which a continuity-resume spawn continues.
	Session string `json:"session,omitzero"`
	// SessionRef: where a settled worker's session can be continued from
	// (WorkResult.SessionRef).
	SessionRef *SessionRef `json:"sessionRef,omitzero"`
	// Continuity and ResumeOf are a spawned record's resolved continuity
	// when it resumes ("resume", and the settled worker it re-attaches
	// to; §3.6 Continuity, Options.ContinuityByProfile): absent for a
	// fresh spawn, and in journals written before spawns recorded it.
	Continuity string `json:"continuity,omitzero"`
	ResumeOf   NodeID `json:"resumeOf,omitzero"`
	// Runtime is where a teardown-unconfirmed record's worker ran (and
	// a settlement's that carries TeardownUnconfirmed).
	Runtime string `json:"runtime,omitzero"`
	// Provider, EnvironmentID and Destroyed are an environment-teardown
	// record's environment and whether its destroy was confirmed (its
	// Reason says why not).
	Provider      string `json:"provider,omitzero"`
	EnvironmentID string `json:"environmentId,omitzero"`
	Destroyed     *bool  `json:"destroyed,omitzero"`
	// Data is a note's payload, owned by the layer that wrote it.
	Data canonjson.Value `json:"data,omitzero"`
	// Result is a finished record's outcome (OutcomeRecord).
	Result *OutcomeRecord `json:"result,omitzero"`
	// Execution is the identity of the execution a worker's executor
	// started (execution-bound, recovery-failed records).
	Execution string `json:"execution,omitzero"`
	// Recovered: a settlement of a worker left in doubt, read from its
	// recovered execution by a resumed run (Recoverer).
	Recovered bool `json:"recovered,omitzero"`
	// TeardownUnconfirmed, on a settlement, says why the worker's
	// executor could not confirm its environment was torn down
	// (WorkResult.TeardownUnconfirmed): journaled with the settlement
	// itself, so a run resumed after a process killed before the
	// teardown-unconfirmed record still names the worker and holds its
	// slot.
	TeardownUnconfirmed string `json:"teardownUnconfirmed,omitzero"`
	// PerWorker, ManagerDigest and DeliverableDigest are a run-started
	// record's per-worker default, manager profile digest and the digest
	// of its Deliverable's Identity (when it has one); its Budget is the
	// run's budget. A resume checks the caller's options against them
	// (ResumeMismatchError). Journals written before carry none.
	PerWorker         *BudgetRecord `json:"perWorker,omitzero"`
	ManagerDigest     string        `json:"managerDigest,omitzero"`
	DeliverableDigest string        `json:"deliverableDigest,omitzero"`
	// Messages are a transcript record's messages (KindTranscript): what
	// the manager Node's conversation gained since its previous one.
	Messages []TranscriptMessage `json:"messages,omitzero"`
	// QuestionID, Question and Decision are a question-asked or
	// question-decided record's (KindQuestionAsked, KindQuestionDecided).
	QuestionID string    `json:"questionId,omitzero"`
	Question   *Question `json:"question,omitzero"`
	Decision   *Decision `json:"decision,omitzero"`
	// Escalation is a question-escalated record's
	// (KindQuestionEscalated).
	Escalation *EscalationRecord `json:"escalation,omitzero"`
	// Breaker is a breaker-tripped record's trip (KindBreakerTripped).
	Breaker *BreakerTrip `json:"breaker,omitzero"`
	// AtMS is when a progress-stopped record's stop happened, and when a
	// settled record's worker settled in a run with a StopRule (Unix
	// milliseconds on the run's clock; absent when not recorded).
	AtMS int64 `json:"atMs,omitzero"`
}

// BudgetRecord is a ledger.Budget as journaled; an absent channel is
// uncapped.
type BudgetRecord struct {
	Tokens     *int64           `json:"tokens,omitzero"`
	Iterations *int64           `json:"iterations,omitzero"`
	MicroUSD   *int64           `json:"microUsd,omitzero"`
	Resources  map[string]int64 `json:"resources,omitzero"`
}

// SpendRecord is a ledger.Spend as journaled; an absent channel is
// unknown, never zero.
type SpendRecord struct {
	Tokens     *int64            `json:"tokens,omitzero"`
	Iterations *int64            `json:"iterations,omitzero"`
	MicroUSD   *int64            `json:"microUsd,omitzero"`
	Resources  map[string]*int64 `json:"resources,omitzero"`
	// TokensFloor is ledger.Spend.TokensFloor: a lower bound on
	// unreported tokens.
	TokensFloor *int64 `json:"tokensFloor,omitzero"`
}

func budgetRecord(b ledger.Budget) *BudgetRecord {
	return &BudgetRecord{Tokens: b.Tokens, Iterations: b.Iterations, MicroUSD: b.MicroUSD, Resources: b.Resources}
}

func (b *BudgetRecord) budget() ledger.Budget {
	if b == nil {
		return ledger.Budget{}
	}
	return ledger.Budget{Tokens: b.Tokens, Iterations: b.Iterations, MicroUSD: b.MicroUSD, Resources: b.Resources}
}

func spendRecord(s ledger.Spend) *SpendRecord {
	return &SpendRecord{Tokens: s.Tokens, Iterations: s.Iterations, MicroUSD: s.MicroUSD, Resources: s.Resources, TokensFloor: s.TokensFloor}
}

func (s *SpendRecord) spend() ledger.Spend {
	if s == nil {
		return ledger.Spend{}
	}
	return ledger.Spend{Tokens: s.Tokens, Iterations: s.Iterations, MicroUSD: s.MicroUSD, Resources: s.Resources, TokensFloor: s.TokensFloor}
}

// RunExistsError: the run directory already holds a journal and the
// caller did not ask to resume it (§15 behaviour 47).
type RunExistsError struct {
	// RunDir is where the journal is: the run directory, or, for a
	// journal in a store (Options.SpawnStore), "run <id> in the store".
	RunDir string
	RunID  string
}

func (e *RunExistsError) Error() string {
	return fmt.Sprintf("supervise: run %q already has a journal in %s; pass Resume to continue it", e.RunID, e.RunDir)
}

// ResumeError: the journal cannot be resumed as asked (another run id,
// a record that does not decode, a replayed spawn the scope refuses).
type ResumeError struct {
	// RunDir is where the journal is, as RunExistsError's.
	RunDir string
	Reason string
	Err    error
}

func (e *ResumeError) Error() string {
	s := "supervise: cannot resume " + e.RunDir + ": " + e.Reason
	if e.Err != nil {
		s += ": " + e.Err.Error()
	}
	return s
}

// Unwrap returns the underlying error.
func (e *ResumeError) Unwrap() error { return e.Err }

// runLog is the run's journal: the durable spawn log when there is one
// (the run dir's file, or a run in a store), and always an in-memory
// copy that read_journal pages through.
type runLog struct {
	dir string
	// where names the journal in a refusal to resume it (ResumeError,
	// RunExistsError): the run dir holding its file, or the store's run
	// ("run <id> in the store", as ReadRunStarted names it), which a run
	// dir, when it has one, does not hold.
	where string
	spawn SpawnLog
	// lock is the run dir's supervise.lock, held while the spawn journal
	// is the run dir's file; nil otherwise.
	lock  *runLock
	coord *journal.Journal
	// questionsInSpawn: the spawn log is not the run dir's file (a
	// store's), so questions and decisions are journaled in it too
	// (appendCoord), where a resume on another machine finds them.
	questionsInSpawn bool
	// layout projects each appended record into state.json and
	// progress.ndjson, and streams writes the root stream and the worker
	// logs; both nil without a run dir.
	layout  *layout
	streams *streams

	// orderMu fixes each record's place in the journal and its turn in
	// order together (enqueue); order makes records visible in that
	// place's order (logTicket.commit).
	orderMu sync.Mutex
	order   sequencer

	mu   sync.Mutex
	rows recordRows
	// steers indexes the in-process steers of rows (journaledSteer).
	steers steerIndex
	// steerRowsRead counts the rows journaledSteer has read (a test's
	// guard that each is read once, not once per steer).
	steerRowsRead int
	// prior counts the rows an earlier process journaled: the first
	// ones, read back when the run was opened.
	prior int
	// blobs holds the refs of the result blobs known to be in the run
	// dir (blobKnown).
	blobMu sync.Mutex
	blobs  map[string]bool

	// loss counts the records of state changes that could not be
	// journaled (appendOrLose).
	loss *JournalLossError

	// revoked is why the run stopped being this process's, once its
	// caller's context ended with a cause matching contract.ErrLeaseLost
	// (see revoke): nothing more is written for it.
	revoked atomic.Pointer[error]
	// holder, when set, is the caller's context the run is held under:
	// once it ended with a cause matching contract.ErrLeaseLost the log
	// is revoked, checked on every write (an AfterFunc alone would race
	// the writes made as the run winds down).
	holder context.Context
	// held, when set, is Options.Held: checked on every write like
	// holder, it revokes the log once the caller no longer vouches for
	// its lease.
	held func() error
}

// openRunLog opens the run's spawn log and coordination log and returns
// what the spawn log already holds. The spawn log is spawn when given
// (its owner opened it), else the file of dir; with neither the log lives
// in memory only. openRunLog owns spawn from then on, also on error.
func openRunLog(ctx context.Context, dir string, spawn SpawnLog) (*runLog, []Record, error) {
	var open func(context.Context) (SpawnLog, error)
	if spawn != nil {
		open = func(context.Context) (SpawnLog, error) { return spawn, nil }
	}
	return openRunLogWith(ctx, dir, open)
}

// spawnLogWrapKey, set on Supervise's context by tests only, holds a
// func(SpawnLog) SpawnLog the run's spawn journal is wrapped in (a test
// stops a process at a chosen append).
type spawnLogWrapKey struct{}

// openRunLogWith is openRunLog whose spawn log, when it is not the run
// dir's file (openSpawn nil), is opened by openSpawn only once the run
// dir's own files are this process's: a store journal's open takes the
// run over (a new lease generation), which must not happen while another
// process on this host still holds the run dir (a paused supervisor) —
// it would fence that process out and then fail here, leaving the run
// to nobody.
func openRunLogWith(ctx context.Context, dir string, openSpawn func(context.Context) (SpawnLog, error)) (*runLog, []Record, error) {
	l := &runLog{dir: dir, where: dir}
	// What this open creates in the run dir, removed again when a store
	// journal's open is refused (another process holds the run): a
	// process that never owned the run leaves no files that read as a
	// run there. newDirs from the outermost; newCoord is the
	// coordination log when this open created it.
	var newDirs []string
	var newCoord string
	if dir != "" {
		newDirs = missingDirs(filepath.Join(dir, BlobsDir))
		if err := os.MkdirAll(filepath.Join(dir, BlobsDir), 0o700); err != nil {
			l.close()
			return nil, nil, fmt.Errorf("supervise: run dir: %w", err)
		}
		if openSpawn == nil {
			// The run dir's file journal: this process owns the run dir
			// through supervise.lock (a store journal is owned through
			// its lease instead) and, under it, the journal's own lock.
			var err error
			if l.lock, err = lockRunDir(dir); err != nil {
				return nil, nil, err
			}
			if l.spawn, err = openFileSpawnLog(dir, ctx.Value(unsyncedJournalKey{}) != nil); err != nil {
				l.close()
				return nil, nil, err
			}
		}
		coordPath := filepath.Join(dir, CoordinationLogFile)
		if _, err := os.Lstat(coordPath); errors.Is(err, fs.ErrNotExist) {
			newCoord = coordPath
		}
		var err error
		if l.coord, err = journal.Open(coordPath, journal.Options{}); err != nil {
			l.close()
			if locked, ok := errors.AsType[*journal.LockedError](err); ok {
				// A store journal's run dir is held through its
				// coordination log's lock: another live supervisor
				// drives the run here. Refuse as supervise.lock does,
				// saying what to do.
				var holder *LockHolder
				if locked.PID > 0 {
					host, _ := os.Hostname()
					holder = &LockHolder{PID: locked.PID, Host: host}
				}
				return nil, nil, &RunDirLockedError{RunDir: dir, Holder: holder}
			}
			return nil, nil, fmt.Errorf("supervise: opening the coordination log: %w", err)
		}
	}
	if openSpawn != nil {
		sp, err := openSpawn(ctx)
		if err != nil {
			if newCoord != "" {
				// Removed while its lock is still this process's: no
				// other process can have taken it meanwhile.
				_ = os.Remove(newCoord)
			}
			l.close()
			for _, d := range slices.Backward(newDirs) {
				_ = os.Remove(d) // only when still empty
			}
			return nil, nil, err
		}
		l.spawn, l.questionsInSpawn = sp, true
		if s, ok := sp.(*StoreSpawnLog); ok {
			l.where = storeJournalName(s.fence.RunID)
		}
	}
	if l.spawn == nil {
		return l, nil, nil
	}
	if wrap, ok := ctx.Value(spawnLogWrapKey{}).(func(SpawnLog) SpawnLog); ok {
		l.spawn = wrap(l.spawn) // tests only
	}
	prior, err := l.spawn.Records(ctx)
	if err != nil {
		l.close()
		return nil, nil, &ResumeError{RunDir: l.where, Reason: "reading the journal", Err: err}
	}
	for _, r := range prior {
		l.rows.add(r)
	}
	l.prior = l.rows.len()
	return l, prior, nil
}

// missingDirs is path and those of its parent directories that do not
// exist, the outermost first: what os.MkdirAll(path) creates.
func missingDirs(path string) []string {
	var missing []string
	for p := filepath.Clean(path); ; p = filepath.Dir(p) {
		if _, err := os.Lstat(p); !errors.Is(err, fs.ErrNotExist) {
			break
		}
		missing = append(missing, p)
		if filepath.Dir(p) == p {
			break
		}
	}
	slices.Reverse(missing)
	return missing
}

// revoke records that the run is no longer this process's (its
// caller lost the lease it held the run under): from then on every
// append, stream or layout write and confirm fails with an error
// matching ErrSpawnLogLost, so the next holder reads only what this
// process wrote while it owned the run.
func (l *runLog) revoke(cause error) {
	err := fmt.Errorf("%w: %w", ErrSpawnLogLost, cause)
	l.revoked.CompareAndSwap(nil, &err)
}

// lostErr is why the run is no longer this process's, or nil.
func (l *runLog) lostErr() error {
	if h := l.holder; h != nil && h.Err() != nil {
		if cause := context.Cause(h); errors.Is(cause, contract.ErrLeaseLost) {
			l.revoke(cause)
		}
	}
	if l.held != nil && l.revoked.Load() == nil {
		if err := l.held(); err != nil {
			l.revoke(err)
		}
	}
	if err := l.revoked.Load(); err != nil {
		return *err
	}
	return nil
}

// append makes r durable (when the log has a spawn log) and then
// visible.
func (l *runLog) append(ctx context.Context, r Record) error {
	return l.enqueue(ctx, r).commit(ctx)
}

// logTicket is a record enqueue placed in the journal's order; commit
// waits for it to be durable and makes it visible.
type logTicket struct {
	l   *runLog
	r   Record
	seq uint64
	// wait awaits the record's durability (a queued file journal
	// append); nil when it was durable before enqueue returned.
	wait func(context.Context) error
	err  error // why the record was not queued
}

// enqueue fixes r's place in the journal and returns at once: a caller
// that keeps its own state in the journal's order (the scope's, under
// Coordinator.spawnMu) enqueues under its lock and commits after
// releasing it, so concurrent spawns and settlements share the file
// journal's fsyncs while the journal's order stays the scope's. A spawn
// log that cannot queue (a store's) appends here, synchronously, as
// append does. Every ticket must be committed: a later one waits for
// every earlier one to be made visible.
func (l *runLog) enqueue(ctx context.Context, r Record) *logTicket {
	t := &logTicket{l: l, r: r}
	if t.err = l.lostErr(); t.err != nil {
		return t
	}
	l.orderMu.Lock()
	defer l.orderMu.Unlock()
	if l.spawn != nil {
		if q, ok := l.spawn.(spawnLogQueuer); ok {
			t.wait, t.err = q.Enqueue(&t.r)
		} else {
			t.err = l.spawn.Append(context.WithoutCancel(ctx), r)
		}
		if t.err != nil {
			return t
		}
	}
	t.seq = l.order.take()
	return t
}

// commit waits until the ticket's record is durable and then makes it
// visible (read_journal's rows, the layout, the stream logs), in the
// journal's order: after every record enqueued before it. It returns
// the append's error; a record that failed is never made visible.
func (t *logTicket) commit(ctx context.Context) error {
	if t.err != nil {
		return t.err
	}
	l := t.l
	var err error
	if t.wait != nil {
		err = t.wait(context.WithoutCancel(ctx))
	}
	l.order.wait(t.seq)
	defer l.order.done(t.seq)
	if err != nil {
		return err
	}
	l.mu.Lock()
	l.rows.add(t.r)
	l.mu.Unlock()
	if l.layout != nil {
		l.layout.observe(&t.r)
	}
	l.streams.observe(&t.r)
	return nil
}

// commitOrLose is commit of a record of a state change already made,
// counting it lost when the append fails (appendOrLose).
func (t *logTicket) commitOrLose(ctx context.Context) error {
	err := t.commit(ctx)
	if err != nil {
		t.l.lose(t.r.Kind, t.r.Node, err)
	}
	return err
}

// sequencer hands out turns in the order take gave them: wait(k)
// returns once every turn before k is done. Each waiter is woken alone,
// so n turns cost O(n).
type sequencer struct {
	mu      sync.Mutex
	next    uint64 // the next turn take hands out
	turn    uint64 // the turn that may run
	waiters map[uint64]chan struct{}
}

// take hands out the next turn; the caller's lock orders it.
func (s *sequencer) take() uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	k := s.next
	s.next++
	return k
}

// wait blocks until turn k may run: every earlier turn is done.
func (s *sequencer) wait(k uint64) {
	s.mu.Lock()
	if s.turn == k {
		s.mu.Unlock()
		return
	}
	if s.waiters == nil {
		s.waiters = map[uint64]chan struct{}{}
	}
	ch := make(chan struct{})
	s.waiters[k] = ch
	s.mu.Unlock()
	<-ch
}

// done ends turn k (the one running) and wakes turn k+1's waiter.
func (s *sequencer) done(k uint64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.turn = k + 1
	if ch, ok := s.waiters[s.turn]; ok {
		delete(s.waiters, s.turn)
		close(ch)
	}
}

// fence is what the stream logs ask before each write: nil while the
// spawn log is this process's. A file spawn log is held by its lock
// until close; a store spawn log until its lease is lost (Held).
func (l *runLog) fence() func() error { return l.heldErr }

// heldErr is nil while the spawn log is this process's (fence), else
// why it is not.
func (l *runLog) heldErr() error {
	if err := l.lostErr(); err != nil {
		return err
	}
	if h, ok := l.spawn.(interface{ Held() error }); ok {
		return h.Held()
	}
	return nil
}

// current is heldErr, and also the loss of a store spawn log whose lease
// ran out by this process's own clock (StoreSpawnLog.current): asked
// before an effect outside the journal that no store call fences, such
// as handing a decision to a worker.
func (l *runLog) current() error {
	if err := l.lostErr(); err != nil {
		return err
	}
	if c, ok := l.spawn.(interface{ current(time.Time) error }); ok {
		return c.current(time.Now())
	}
	return l.heldErr()
}

// lost is closed once a spawn log whose holder can lose it (a store
// spawn log) was lost; nil for a log held by its lock until close.
func (l *runLog) lost() <-chan struct{} {
	if h, ok := l.spawn.(interface{ Lost() <-chan struct{} }); ok {
		return h.Lost()
	}
	return nil
}

// confirm asks a spawn log whose holder can lose it (a store spawn
// log) whether this process still holds it, with a fenced write; nil
// for a log held by its lock until close.
func (l *runLog) confirm(ctx context.Context) error {
	if err := l.lostErr(); err != nil {
		return err
	}
	if c, ok := l.spawn.(interface{ Confirm(context.Context) error }); ok {
		return c.Confirm(context.WithoutCancel(ctx))
	}
	return nil
}

// page returns rows from index since on, filtered by kinds, at most
// limit of them, and the index to continue from.
func (l *runLog) page(since int, kinds []string, limit, maxBytes int) ([]Record, int, bool, *OversizeRow) {
	l.mu.Lock()
	defer l.mu.Unlock()
	want := map[string]bool{}
	for _, k := range kinds {
		want[k] = true
	}
	var out []Record
	var over *OversizeRow
	used := 2 // the rows array's brackets
	i := max(since, 0)
	for ; i < l.rows.len() && len(out) < limit; i++ {
		// A manager's own transcript is paged only when asked for: read
		// back unasked, it would feed the conversation to itself.
		r := l.rows.at(i)
		if len(want) != 0 && !want[r.Kind] || len(want) == 0 && r.Kind == KindTranscript {
			continue
		}
		if maxBytes > 0 {
			// Measured as read_journal encodes it: encoding/json would
			// write the row's Data (a canonjson.Value) as {}.
			v, err := canonjson.ToValue(r)
			b := canonjson.Marshal(v)
			n := len(b)
			if len(out) > 0 {
				n++ // the comma before it
			}
			if err == nil && used+n > maxBytes {
				if len(out) > 0 {
					break
				}
				// A row no page holds would stop the cursor for good:
				// it is named, and the page goes past it.
				over = &OversizeRow{Row: i, Kind: r.Kind, Bytes: len(b)}
				i++
				break
			}
			used += n
		}
		out = append(out, *r)
	}
	return out, i, i < l.rows.len(), over
}

// length is how many rows the journal holds, prior processes' included.
func (l *runLog) length() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.rows.len()
}

// journalKinds are the kinds of record a run's journal holds, sorted:
// the kinds read_journal's filter may name.
var journalKinds = []string{
	KindAborted, KindAfterSettle, KindAnalysisRefused, KindAnalysisRequested, KindAnalystDefined,
	KindBreakerTripped, KindCancelAcknowledged, KindCancelRequested, KindDeadlinePassed,
	KindDriverAttempt, KindDriverTurn, KindDriverTurnEnded, KindEdge, KindEnvironmentTeardown,
	KindExecutionBound, KindExtraToolCalled, KindExtraToolDone, KindFindingDetected, KindFinished,
	KindGraph, KindMail, KindMetered, KindProgressStopped, KindQuestionAsked, KindQuestionDecided,
	KindQuestionEscalated, KindRecoveryFailed, KindRunCancelAcknowledged, KindRunCancelRequested,
	KindRunStarted, KindSettled, KindSpawned, KindSteerAcknowledged, KindSteerRequested,
	KindSubmitted, KindTeardownUnconfirmed, KindTraceUnpropagated, KindTranscript, KindWorkerRetry,
}

// rowChunk is how many records one chunk of recordRows holds.
const rowChunk = 256

// recordRows is the in-memory copy of the journal, in fixed-size
// chunks: appending a record never copies the ones before it (a Record
// is some 500 bytes, and a run of many workers holds many), so the
// append on the spawn and settle path costs the same however long the
// run is.
type recordRows struct {
	chunks [][]Record
	n      int
}

func (r *recordRows) add(rec Record) {
	if r.n%rowChunk == 0 {
		r.chunks = append(r.chunks, make([]Record, 0, rowChunk))
	}
	last := len(r.chunks) - 1
	r.chunks[last] = append(r.chunks[last], rec)
	r.n++
}

func (r *recordRows) len() int { return r.n }

// at returns row i, 0 <= i < len().
func (r *recordRows) at(i int) *Record { return &r.chunks[i/rowChunk][i%rowChunk] }

// putBlob stores v content-addressed and returns its ref
// ("sha256:<hex>").
// A value whose canonical form is over MaxResultBlobBytes is not
// stored (a resume could not read it back): a *BlobError.
func (l *runLog) putBlob(ctx context.Context, v canonjson.Value) (string, error) {
	data, err := canonjson.Canonical(v)
	if err != nil {
		return "", fmt.Errorf("supervise: result blob: %w", err)
	}
	ref := canonjson.DigestBytes(data)
	if len(data) > MaxResultBlobBytes {
		return "", &BlobError{Ref: ref, Path: l.blobName(ref), Size: int64(len(data)), Limit: MaxResultBlobBytes}
	}
	if b, ok := l.spawn.(blobStore); ok {
		// A journal in a store keeps the blobs beside it: the run dir
		// is this machine's, the journal may be resumed on another.
		if err := b.PutBlob(context.WithoutCancel(ctx), ref, v); err != nil {
			return "", err
		}
	}
	if l.dir == "" {
		return ref, nil
	}
	if l.blobKnown(ref) {
		return ref, nil
	}
	path := l.blobPath(ref)
	if _, err := os.Stat(path); err == nil {
		l.knowBlob(ref)
		return ref, nil
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".blob-*")
	if err != nil {
		return "", fmt.Errorf("supervise: result blob: %w", err)
	}
	_, werr := tmp.Write(data)
	if werr == nil {
		werr = tmp.Sync()
	}
	if cerr := tmp.Close(); werr == nil {
		werr = cerr
	}
	if werr == nil {
		werr = os.Rename(tmp.Name(), path)
	}
	if werr != nil {
		os.Remove(tmp.Name())
		return "", fmt.Errorf("supervise: result blob: %w", werr)
	}
	// The settlement that names the blob is journaled next: the blob's
	// directory entry must be durable first, or a power loss leaves a
	// durable settlement pointing at nothing.
	if err := syncDir(filepath.Dir(path)); err != nil {
		return "", fmt.Errorf("supervise: result blob: %w", err)
	}
	l.knowBlob(ref)
	return ref, nil
}

// blobKnown reports whether blob ref is known to be in the run dir: this
// process wrote it (file and directory entry synced) or found it there.
// Blobs are content-addressed and never removed while the run dir is
// this process's, so a ref once known stays known, and a settlement
// whose result many workers share costs no file system call.
func (l *runLog) blobKnown(ref string) bool {
	l.blobMu.Lock()
	defer l.blobMu.Unlock()
	return l.blobs[ref]
}

// knowBlob records that blob ref is in the run dir (blobKnown).
func (l *runLog) knowBlob(ref string) {
	l.blobMu.Lock()
	defer l.blobMu.Unlock()
	if l.blobs == nil {
		l.blobs = map[string]bool{}
	}
	l.blobs[ref] = true
}

// blobStore is a spawn log that keeps result blobs beside the journal
// (StoreSpawnLog).
type blobStore interface {
	PutBlob(ctx context.Context, ref string, v canonjson.Value) error
	GetBlob(ctx context.Context, ref string) (canonjson.Value, error)
}

// getBlob reads a stored result back: from the run dir, else from the
// spawn log's store; a missing blob is fs.ErrNotExist. A ref that is not
// a digest, a blob file over MaxResultBlobBytes (refused unread), one
// that is not JSON and a blob that does not hash to its name are each a
// *BlobError.
func (l *runLog) getBlob(ref string) (canonjson.Value, error) {
	if !canonjson.IsDigest(ref) {
		return canonjson.Value{}, &BlobError{Ref: ref, Path: l.blobName(ref), Err: errBlobRef}
	}
	v, err := l.readBlob(ref)
	if err != nil {
		return canonjson.Value{}, err
	}
	got, err := canonjson.Digest(v)
	if err == nil && got != ref {
		err = fmt.Errorf("%w (it hashes to %s)", errBlobDigest, got)
	}
	if err != nil {
		return canonjson.Value{}, &BlobError{Ref: ref, Path: l.blobName(ref), Err: err}
	}
	return v, nil
}

// readBlob reads blob ref, a digest, unchecked: the run dir's file when
// there is one, else the copy the spawn log's store keeps.
func (l *runLog) readBlob(ref string) (canonjson.Value, error) {
	if l.dir != "" {
		data, err := readBlobFile(ref, l.blobPath(ref))
		if err == nil {
			v, err := canonjson.Decode(data)
			if err != nil {
				return canonjson.Value{}, &BlobError{Ref: ref, Path: l.blobPath(ref), Err: err}
			}
			return v, nil
		}
		if !errors.Is(err, fs.ErrNotExist) {
			return canonjson.Value{}, err
		}
	}
	if b, ok := l.spawn.(blobStore); ok {
		return b.GetBlob(context.Background(), ref)
	}
	return canonjson.Value{}, fs.ErrNotExist
}

// readBlobFile reads the blob file at path, refusing one over
// MaxResultBlobBytes before reading it (and one that grew past it while
// it was read) with a *BlobError.
func readBlobFile(ref, path string) ([]byte, error) {
	f, _, err := regularfile.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, &BlobError{Ref: ref, Path: path, Err: err}
	}
	if st.Size() > MaxResultBlobBytes {
		return nil, &BlobError{Ref: ref, Path: path, Size: st.Size(), Limit: MaxResultBlobBytes}
	}
	data, err := io.ReadAll(io.LimitReader(f, MaxResultBlobBytes+1))
	if err != nil {
		return nil, &BlobError{Ref: ref, Path: path, Err: err}
	}
	if len(data) > MaxResultBlobBytes {
		return nil, &BlobError{Ref: ref, Path: path, Size: int64(len(data)), Limit: MaxResultBlobBytes}
	}
	return data, nil
}

// blobName is how a *BlobError names blob ref: its run dir file, or its
// place in the spawn log's store.
func (l *runLog) blobName(ref string) string {
	if l.dir != "" {
		return l.blobPath(ref)
	}
	return "store " + blobScope + " " + ref
}

func (l *runLog) blobPath(ref string) string {
	return filepath.Join(l.dir, BlobsDir, "sha256-"+strings.TrimPrefix(ref, "sha256:")+".json")
}

// appendCoord makes r durable in the coordination log, when there is
// one, and a question or a decision also in a spawn log that is not the
// run dir's file (questionsInSpawn): the journal a resume reads them
// back from (replayQuestions).
func (l *runLog) appendCoord(ctx context.Context, r CoordRecord) error {
	var errs []error
	if l.questionsInSpawn {
		if rec, ok := questionRecord(r); ok {
			errs = append(errs, l.append(ctx, rec))
		}
	}
	if l.coord == nil {
		return errors.Join(errs...)
	}
	if err := l.lostErr(); err != nil {
		return err // the run is no longer this process's: nothing more is written for it
	}
	v, err := canonjson.ToValue(r)
	if err != nil {
		return fmt.Errorf("supervise: coordination record: %w", err)
	}
	if _, err := l.coord.Append(context.WithoutCancel(ctx), v); err != nil {
		errs = append(errs, fmt.Errorf("supervise: coordination log append: %w", err))
	}
	return errors.Join(errs...)
}

func (l *runLog) close() error {
	var errs []error
	// The stream logs and the layout first: their last writes are
	// fenced by the spawn log, which must still be held (a store log's
	// Close releases its lease, and the next holder may write at once).
	errs = append(errs, l.streams.close())
	if l.layout != nil {
		errs = append(errs, l.layout.close())
	}
	if l.spawn != nil {
		errs = append(errs, l.spawn.Close())
	}
	if l.coord != nil {
		errs = append(errs, l.coord.Close())
	}
	// The run dir's lock last: until every file is closed, it is this
	// process's.
	errs = append(errs, l.lock.release())
	return errors.Join(errs...)
}

// MaxResultBlobBytes bounds one result blob (the canonical JSON of a
// settled worker's result {text, output}, of an accepted submit_result,
// or of one manager transcript message too large to journal inline):
// putBlob refuses a larger value, so it is never delivered, and a blob
// file read back larger than it is refused unread, both with a
// *BlobError. It is the bound of one request to the coordination tools'
// HTTP server (mcpserver.DefaultMaxRequestBytes), which a submitted
// result arrives in.
const MaxResultBlobBytes = 16 << 20

// Why a blob is refused (BlobError.Err).
var (
	errBlobRef    = errors.New("the ref is not a digest")
	errBlobDigest = errors.New("the blob does not hash to its name")
)

// BlobError reports a result blob that cannot be stored or read back:
// over its limit (Size is what it held, Limit MaxResultBlobBytes), or
// damaged (Err says how: not JSON, not hashing to its name, or a ref
// that is not a digest).
type BlobError struct {
	// Ref is the blob's name ("sha256:<hex>"); Path its run dir file
	// (or its place in a store).
	Ref, Path   string
	Size, Limit int64
	// Err is why a damaged blob is refused; nil for an oversized one.
	Err error
}

func (e *BlobError) Error() string {
	if e.Err != nil {
		return fmt.Sprintf("supervise: result blob %s: %v", e.Path, e.Err)
	}
	return fmt.Sprintf("supervise: result blob %s holds %d bytes, over its limit of %d", e.Path, e.Size, e.Limit)
}

// Unwrap returns why a damaged blob is refused.
func (e *BlobError) Unwrap() error { return e.Err }

// RunDirMismatchError: the run directory's state.json (or, resuming,
// its journal, then wrapped in a *ResumeError) names another run than
// the one being opened there. The directory is that run's: it is
// neither adopted nor overwritten.
type RunDirMismatchError struct {
	RunDir   string
	RunID    string // the run being opened
	Recorded string // the run the directory's state names
}

func (e *RunDirMismatchError) Error() string {
	return fmt.Sprintf("supervise: %s is the directory of run %q, not of run %q: give run %q a directory of its own", e.RunDir, e.Recorded, e.RunID, e.RunID)
}
