package supervise

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/contract"
	"github.com/agentrt/agentrt/journal"
	"github.com/agentrt/agentrt/kernel"
	"github.com/agentrt/agentrt/ledger"
)

// The stream logs of the supervisor run layout (§3.6 "Supervisor run
// layout"): what the manager did, in root-stream.jsonl, and what each
// worker did, in workers/<label>.ndjson. Both are observation logs
// written through the journal writer without a flush per append
// (journal.Options.NoSync): a crash may lose their last lines, never the
// spawn journal's, which stays the run's truth.
const (
	// RootStreamFile holds the manager's own stream: each model turn of
	// its brain (started, the events it streamed, ended with its usage;
	// brains that use Coordinator.TurnMeter, as the router brain does),
	// each coordination verb it called through Coordinator.Tools (an
	// external harness over MCP included) and how the call ended, and
	// the run's cancellation. Verbs called as Go methods are not streamed.
	RootStreamFile = "root-stream.jsonl"
	// SupervisorDir is where, under a workspace root, a run's directory
	// lives by default: <root>/.agent/supervisor/<runId> (RunDirFor).
	SupervisorDir = ".agent/supervisor"
)

// Stream log limits.
const (
	// MaxStreamRecordBytes bounds one stream line.
	MaxStreamRecordBytes = 16 << 10
	// MaxStreamText bounds the text one stream record carries (a
	// streamed delta, a task, a tool call's arguments, a reason), in
	// bytes; a longer text is clipped and the record marked Clipped.
	MaxStreamText = 2000
	// MaxRootStreamBytes bounds root-stream.jsonl and MaxWorkerLogBytes
	// one worker log. The line that would pass the bound is replaced by
	// one truncated record and later lines are dropped; the spawn journal
	// still holds every state change.
	MaxRootStreamBytes = 16 << 20
	MaxWorkerLogBytes  = 4 << 20
	// maxPendingStream bounds the stream lines waiting for the writer; a
	// line that finds it full is dropped and counted (a StreamDropped
	// line says how many), so that neither the spawn path nor a worker
	// ever waits on an observation log.
	maxPendingStream = 4096
)

// Stream record kinds.
const (
	// StreamTurnStarted, StreamEvent and StreamTurnEnded are a model
	// turn: its start (Run, Model), each durable event it streamed
	// (Event, EventID, Text for a text delta) and its end (Terminal,
	// the tokens it reported).
	StreamTurnStarted = "turn-started"
	StreamEvent       = "event"
	StreamTurnEnded   = "turn-ended"
	// StreamToolStarted and StreamToolEnded are one tool call of the
	// manager's brain: Tool, CallID, Text (the arguments) and then OK,
	// Code and Text (why it failed).
	StreamToolStarted = "tool-started"
	StreamToolEnded   = "tool-ended"
	// StreamSpawned and StreamSettled open and close a worker's log:
	// Profile and Text (the task), then State and Reason.
	StreamSpawned = "spawned"
	StreamSettled = "settled"
	// StreamSteer and StreamCancel are a steer or a cancellation of the
	// worker (or, in the root stream, of the run): OperationID and the
	// Effect it has now.
	StreamSteer  = "steer"
	StreamCancel = "cancel"
	// StreamTruncated is the last line of a log that reached its bound.
	StreamTruncated = "truncated"
	// StreamDropped, in the root stream, counts (Dropped) the lines
	// dropped because the writer fell maxPendingStream lines behind.
	StreamDropped = "dropped"
)

// StreamRecord is one line of root-stream.jsonl or of a worker log.
// Kind says which fields are set (see the Stream* kinds). Tokens a turn
// did not report are absent, never zero.
type StreamRecord struct {
	Kind         string `json:"kind"`
	AtMS         int64  `json:"atMs"`
	Node         NodeID `json:"node,omitzero"`
	Label        string `json:"label,omitzero"`
	Profile      string `json:"profile,omitzero"`
	Run          string `json:"run,omitzero"`
	Model        string `json:"model,omitzero"`
	Event        string `json:"event,omitzero"`
	EventID      string `json:"eventId,omitzero"`
	Text         string `json:"text,omitzero"`
	Clipped      bool   `json:"clipped,omitzero"`
	Tool         string `json:"tool,omitzero"`
	CallID       string `json:"callId,omitzero"`
	OK           *bool  `json:"ok,omitzero"`
	Code         string `json:"code,omitzero"`
	Terminal     string `json:"terminal,omitzero"`
	InputTokens  *int64 `json:"inputTokens,omitzero"`
	OutputTokens *int64 `json:"outputTokens,omitzero"`
	State        State  `json:"state,omitzero"`
	Reason       string `json:"reason,omitzero"`
	OperationID  string `json:"operationId,omitzero"`
	Effect       string `json:"effect,omitzero"`
	Dropped      int64  `json:"dropped,omitzero"`
}

// withText sets r's Text to s, clipped to MaxStreamText.
func (r StreamRecord) withText(s string) StreamRecord {
	if len(s) > MaxStreamText {
		s, r.Clipped = clip(s, MaxStreamText), true
	}
	r.Text = s
	return r
}

var runIDPattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$`)

// RunDirFor is the default directory of run runID under workspace root:
// <root>/.agent/supervisor/<stem>, the stem as RunDirStem makes it, so
// that a run id never names a path outside the supervisor directory and
// two distinct run ids never name one directory.
func RunDirFor(root, runID string) string {
	return filepath.Join(root, filepath.FromSlash(SupervisorDir), RunDirStem(runID))
}

// RunDirIn is where run runID's directory is under workspace root: at
// RunDirFor, unless nothing is there and the directory an earlier
// agentrt made for a run id that is not a plain name (every byte outside
// [A-Za-z0-9._-] replaced by '_', "a_b" for "a:b") records exactly this
// run — its state.json, else its journal's run-started — so a run
// started before the mapping became one-to-one still resumes, is
// steered and cancelled. A directory recording another run is never
// taken. A new run is made at RunDirFor.
func RunDirIn(root, runID string) string {
	dir := RunDirFor(root, runID)
	legacy := filepath.Join(root, filepath.FromSlash(SupervisorDir), legacyRunDirStem(runID))
	if legacy == dir {
		return dir
	}
	if _, err := os.Stat(dir); !errors.Is(err, fs.ErrNotExist) {
		return dir
	}
	if fi, err := os.Stat(legacy); err != nil || !fi.IsDir() {
		return dir
	}
	if recordedRunID(legacy) == runID {
		return legacy
	}
	return dir
}

// legacyRunDirStem is the stem RunDirFor made before RunDirStem: the id
// with every byte outside [A-Za-z0-9._-] replaced by '_' ("worker" when
// empty), "_" before a stem of only dots.
func legacyRunDirStem(runID string) string {
	stem := WorkerStem(NodeID(runID))
	if strings.Trim(stem, ".") == "" {
		stem = "_" + stem
	}
	return stem
}

// recordedRunID is the run dir's own record of its run: its state.json's
// runId, else its journal's run-started; "" when neither says.
func recordedRunID(dir string) string {
	if st, err := ReadRunState(context.Background(), dir); err == nil {
		return st.RunID
	}
	for e, err := range journal.Read(context.Background(), filepath.Join(dir, SpawnJournalFile), 1, journal.Options{}) {
		if err != nil {
			return ""
		}
		var r Record
		if canonjson.FromValue(e.Value, &r) != nil || r.Kind != KindRunStarted {
			return ""
		}
		return r.RunID
	}
	return ""
}

// maxRunDirStem is the longest stem RunDirStem makes: NAME_MAX of the
// common file systems.
const maxRunDirStem = 255

// RunDirStem is the name of run runID's directory in the supervisor
// directory (RunDirFor), one-to-one with the run id:
//
//   - a plain id (only [A-Za-z0-9._-], not only dots, at most 255 bytes)
//     is its own stem, as it always was;
//   - any other id is escaped: each byte outside [A-Za-z0-9._-], and
//     each dot of an id of only dots, becomes '%' and two uppercase hex
//     digits ("a:b" is "a%3Ab", ".." is "%2E%2E"); the empty id is "%";
//   - a stem that would be longer than 255 bytes is "%h" and the
//     lowercase hex SHA-256 of the id.
//
// Every stem but a plain id's holds a '%', which no plain id does, and
// the escaped forms decode uniquely, so no two ids share a stem.
func RunDirStem(runID string) string {
	plain, dots := true, true
	for i := 0; i < len(runID); i++ {
		plain = plain && plainStemByte(runID[i])
		dots = dots && runID[i] == '.'
	}
	if plain && !dots && len(runID) <= maxRunDirStem {
		return runID
	}
	if runID == "" {
		return "%"
	}
	var b strings.Builder
	for i := 0; i < len(runID) && b.Len() <= maxRunDirStem; i++ {
		if c := runID[i]; plainStemByte(c) && !dots {
			b.WriteByte(c)
		} else {
			fmt.Fprintf(&b, "%%%02X", c)
		}
	}
	if b.Len() > maxRunDirStem {
		sum := sha256.Sum256([]byte(runID))
		return "%h" + hex.EncodeToString(sum[:])
	}
	return b.String()
}

// plainStemByte reports whether c stands for itself in a run dir stem.
func plainStemByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-'
}

// WorkerLogStem is the file stem of the log of the workers labelled
// label: WorkerStem of the label (a worker without a label is labelled
// with its profile's name), with "_" added to a stem ending in ".inbox"
// so that a label never names an inbox projection.
func WorkerLogStem(label string) string {
	s := WorkerStem(NodeID(label))
	if strings.HasSuffix(s, ".inbox") {
		s += "_"
	}
	return s
}

// WorkerLogPath is where the workers labelled label log in runDir:
// workers/<stem>.ndjson. Workers sharing a label share the file; each
// record names its worker (Node).
func WorkerLogPath(runDir, label string) string {
	return filepath.Join(runDir, WorkersDir, WorkerLogStem(label)+".ndjson")
}

// ReadRootStream reads root-stream.jsonl of run directory dir without
// locking it, tolerantly: a torn tail is ignored, a corrupt line or one
// that is not a StreamRecord is skipped and counted, never hiding the
// lines after it. A run that wrote none gives an error matching
// fs.ErrNotExist.
func ReadRootStream(ctx context.Context, dir string) ([]StreamRecord, int, error) {
	return readTolerant[StreamRecord](ctx, filepath.Join(dir, RootStreamFile))
}

// ReadWorkerLog reads the log of the workers labelled label in run
// directory dir, as ReadRootStream reads the root stream.
func ReadWorkerLog(ctx context.Context, dir, label string) ([]StreamRecord, int, error) {
	return readTolerant[StreamRecord](ctx, WorkerLogPath(dir, label))
}

// streamItem is one line waiting for the writer: stem "" is the root
// stream.
type streamItem struct {
	stem string
	rec  StreamRecord
}

// streamFile is one open stream log, owned by the writer goroutine.
type streamFile struct {
	j     *journal.Journal
	size  int64
	limit int64
	full  bool
	// users counts the live workers logging here (spawned, not yet
	// settled): a log with none may be closed (evict). used orders the
	// logs by their last batch.
	users int
	used  int64
}

// streams writes a run's root stream and worker logs. Records are
// queued under mu (dropped and counted when maxPendingStream lines are
// queued) and written by one goroutine, one append per file per batch,
// so neither the spawn path nor a worker's stream waits on the disk.
// fence, when set, is asked before each batch: once it fails (the run's
// lease was lost) nothing more is written. Its methods are safe for
// concurrent use.
type streams struct {
	dir    string
	now    func() time.Time
	logger *slog.Logger
	fence  func() error

	mu      sync.Mutex
	pending []streamItem
	// spare is the slice of a batch the writer has written, emptied,
	// for pending to reuse: a run's lines need not grow a new slice per
	// batch.
	spare   []streamItem
	dropped int64             // lines dropped since the writer last took pending
	stems   map[NodeID]string // every worker of the run → its log's stem
	closing bool

	kick chan struct{} // cap 1: work is waiting
	stop chan struct{} // closed with kick by close: it ends the linger
	done chan struct{}

	// Owned by the writer goroutine.
	files   map[string]*streamFile
	batches int64
	fenced  bool
}

// openStreams opens the root stream of dir and restores which workers
// the journal's prior records left unsettled.
func openStreams(dir string, prior []Record, fence func() error, now func() time.Time, logger *slog.Logger) (*streams, error) {
	s, err := newStreams(dir, prior, fence, now, logger)
	if err != nil {
		return nil, err
	}
	go s.write()
	return s, nil
}

// newStreams is openStreams without starting the writer.
func newStreams(dir string, prior []Record, fence func() error, now func() time.Time, logger *slog.Logger) (*streams, error) {
	s := &streams{dir: dir, now: now, logger: logger, fence: fence, stems: map[NodeID]string{},
		kick: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{}), files: map[string]*streamFile{}}
	if _, err := s.file(""); err != nil {
		return nil, fmt.Errorf("supervise: opening the root stream: %w", err)
	}
	for _, r := range prior {
		if _, ok := r.Node.Parent(); ok && r.Kind == KindSpawned {
			s.stems[r.Node] = WorkerLogStem(labelOf(r.Label, r.Profile))
		}
	}
	return s, nil
}

// file returns the open log of stem, opening it (and the workers
// directory) on first use; the writer goroutine, or openStreams before
// it starts, calls it.
func (s *streams) file(stem string) (*streamFile, error) {
	if f := s.files[stem]; f != nil {
		return f, nil
	}
	path, limit := filepath.Join(s.dir, RootStreamFile), int64(MaxRootStreamBytes)
	if stem != "" {
		path, limit = filepath.Join(s.dir, WorkersDir, stem+".ndjson"), MaxWorkerLogBytes
	}
	j, err := journal.Open(path, journal.Options{MaxRecordBytes: MaxStreamRecordBytes, CreateDir: true, NoSync: true})
	if err != nil {
		return nil, err
	}
	fi, err := os.Stat(path)
	if err != nil {
		j.Close()
		return nil, err
	}
	f := &streamFile{j: j, size: fi.Size(), limit: limit, full: fi.Size() >= limit}
	s.files[stem] = f
	return f, nil
}

// add queues rec for the log of stem.
func (s *streams) add(stem string, rec StreamRecord) {
	if s == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.queueLocked(stem, rec)
}

// queueLocked queues one line, or drops it when maxPendingStream lines
// wait already; s.mu is held.
func (s *streams) queueLocked(stem string, rec StreamRecord) {
	if s.closing {
		return
	}
	if len(s.pending) >= maxPendingStream {
		s.dropped++
		return
	}
	if rec.AtMS == 0 {
		rec.AtMS = s.now().UnixMilli()
	}
	if s.pending == nil {
		s.pending, s.spare = s.spare, nil
	}
	s.pending = append(s.pending, streamItem{stem: stem, rec: rec})
	select {
	case s.kick <- struct{}{}:
	default:
	}
}

// observe turns a journaled record into the stream line it makes, if
// any: a worker's spawn, settlement, steers and cancellations go to its
// log, a run cancellation to the root stream.
func (s *streams) observe(r *Record) {
	if s == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	switch r.Kind {
	case KindSpawned:
		if _, ok := r.Node.Parent(); !ok {
			return
		}
		label := labelOf(r.Label, r.Profile)
		stem := WorkerLogStem(label)
		s.stems[r.Node] = stem
		s.queueLocked(stem, StreamRecord{Kind: StreamSpawned, Node: r.Node, Label: label, Profile: r.Profile}.withText(r.Task))
	case KindSettled:
		stem, ok := s.stems[r.Node]
		if !ok {
			return
		}
		s.queueLocked(stem, StreamRecord{Kind: StreamSettled, Node: r.Node, State: r.State}.withReason(r.Reason))
	case KindSteerRequested, KindSteerAcknowledged, KindCancelRequested, KindCancelAcknowledged,
		KindRunCancelRequested, KindRunCancelAcknowledged:
		p, ok := controlProgress(r, s.now().UnixMilli())
		if !ok {
			return
		}
		kind := StreamCancel
		if p.Kind == ProgressSteer {
			kind = StreamSteer
		}
		stem, known := s.stems[r.Node]
		switch {
		case r.Kind == KindRunCancelRequested || r.Kind == KindRunCancelAcknowledged:
			stem = ""
		case !known:
			return // not a worker of this run (refused before it resolved)
		}
		s.queueLocked(stem, StreamRecord{Kind: kind, Node: r.Node, OperationID: p.OperationID, Effect: p.Effect})
	}
}

// withReason sets r's Reason, clipped to MaxStreamText.
func (r StreamRecord) withReason(reason string) StreamRecord {
	if len(reason) > MaxStreamText {
		reason, r.Clipped = clip(reason, MaxStreamText), true
	}
	r.Reason = reason
	return r
}

// write is the writer goroutine: it runs until close, and drains what
// waits before it stops. Failures are logged, never returned: the logs
// are observations, and the spawn journal holds the run's truth.
func (s *streams) write() {
	defer close(s.done)
	t := newLingerTimer()
	for {
		_, open := <-s.kick
		if open {
			open = linger(t, s.stop) // let lines that come meanwhile join the batch
		}
		s.mu.Lock()
		batch, dropped := s.pending, s.dropped
		s.pending, s.dropped = nil, 0
		s.mu.Unlock()
		if dropped > 0 {
			batch = append(batch, streamItem{rec: StreamRecord{Kind: StreamDropped, AtMS: s.now().UnixMilli(), Dropped: dropped,
				Reason: "the stream writer fell behind; these lines were dropped"}})
		}
		s.writeBatch(batch)
		clear(batch)
		s.mu.Lock()
		if cap(batch) <= maxPendingStream {
			s.spare = batch[:0]
		}
		s.mu.Unlock()
		if !open {
			return
		}
	}
}

// writeBatch appends batch, one append per file, in the order each
// file's lines were queued, then closes the idle worker logs past
// maxOpenWorkerLogs.
func (s *streams) writeBatch(batch []streamItem) {
	if len(batch) == 0 || s.fenced {
		return
	}
	if s.fence != nil {
		if err := s.fence(); err != nil {
			s.fenced = true
			s.logger.Error("supervise: the run's lease is lost; its stream logs are not written any more", "err", err)
			return
		}
	}
	var order []string
	items := map[string][]*streamItem{}
	s.batches++
	for i := range batch {
		it := &batch[i] // its record is appended by reference
		f, err := s.file(it.stem)
		if err != nil {
			s.logger.Error("supervise: opening a stream log", "stem", it.stem, "err", err)
			continue
		}
		f.used = s.batches
		switch it.rec.Kind {
		case StreamSpawned:
			f.users++
		case StreamSettled:
			f.users = max(f.users-1, 0)
		}
		if f.full {
			continue
		}
		if _, seen := items[it.stem]; !seen {
			order = append(order, it.stem)
		}
		items[it.stem] = append(items[it.stem], it)
	}
	for _, stem := range order {
		s.appendLines(stem, s.files[stem], items[stem])
	}
	s.evict()
}

// appendLines appends the lines of one file as one append. Lines that
// cannot reach the file's bound (each is at most MaxStreamRecordBytes)
// are encoded once, by the append; otherwise, or when the append
// refuses them, appendBounded does what it always did.
func (s *streams) appendLines(stem string, f *streamFile, items []*streamItem) {
	if f.size+int64(len(items))*(MaxStreamRecordBytes+1) <= f.limit-truncatedReserve {
		recs := make([]any, len(items))
		for i, it := range items {
			recs[i] = &it.rec
		}
		before := f.j.Size()
		if _, err := f.j.AppendOf(context.Background(), recs...); err == nil {
			f.size += f.j.Size() - before
			return
		}
		// Nothing was written (a record that does not encode, or one
		// too large) or the log failed: the careful way logs it as
		// before.
	}
	s.appendBounded(stem, f, items)
}

// appendBounded encodes each line of one file before its append: a
// record that does not encode is logged and skipped, and the line that
// would pass the file's bound is replaced by one truncated record,
// later lines dropped.
func (s *streams) appendBounded(stem string, f *streamFile, items []*streamItem) {
	var lines []any
	var data []byte
	for _, it := range items {
		if f.full {
			break
		}
		var rec any = &it.rec
		var err error
		if data, err = canonjson.AppendCanonicalOf(data[:0], rec); err != nil {
			s.logger.Error("supervise: a stream record", "err", err)
			continue
		}
		if f.size+int64(len(data))+1 > f.limit-truncatedReserve {
			f.full = true
			rec = &StreamRecord{Kind: StreamTruncated, AtMS: it.rec.AtMS, Reason: fmt.Sprintf("the log reached %d bytes", f.limit)}
			data, _ = canonjson.AppendCanonicalOf(data[:0], rec)
		}
		lines = append(lines, rec)
		f.size += int64(len(data)) + 1
	}
	if len(lines) == 0 {
		return
	}
	if _, err := f.j.AppendOf(context.Background(), lines...); err != nil {
		s.logger.Error("supervise: appending to a stream log", "stem", stem, "err", err)
	}
}

// maxOpenWorkerLogs is how many worker logs stay open with no live
// worker logging to them, so that the next worker of a label (a run of
// many workers of one profile) appends without reopening, which would
// rescan the file. Beyond it the least recently used idle logs are
// closed; logs of live workers stay open (MaxLiveWorkers bounds them).
const maxOpenWorkerLogs = 64

// evict closes idle worker logs, least recently used first, until at
// most maxOpenWorkerLogs worker logs are open; the writer goroutine
// calls it.
func (s *streams) evict() {
	for len(s.files)-1 > maxOpenWorkerLogs {
		var oldest string
		var at int64 = -1
		for stem, f := range s.files {
			if stem != "" && f.users == 0 && (at < 0 || f.used < at) {
				oldest, at = stem, f.used
			}
		}
		if at < 0 {
			return // every open log has a live worker
		}
		if err := s.files[oldest].j.Close(); err != nil {
			s.logger.Error("supervise: closing a worker log", "stem", oldest, "err", err)
		}
		delete(s.files, oldest)
	}
}

// truncatedReserve keeps room at a log's end for its truncated record.
const truncatedReserve = 256

// close drains what waits, stops the writer and closes every log.
func (s *streams) close() error {
	if s == nil {
		return nil
	}
	s.mu.Lock()
	if !s.closing {
		s.closing = true
		close(s.kick)
		close(s.stop)
	}
	s.mu.Unlock()
	<-s.done
	var first error
	for stem, f := range s.files {
		if err := f.j.Close(); err != nil && first == nil {
			first = err
		}
		delete(s.files, stem)
	}
	return first
}

// streamObserver writes a model run's turns and events to one stream
// log (stem "" is the root stream) and passes every hook on to inner.
type streamObserver struct {
	s    *streams
	stem string
	node NodeID
	passObserver
}

// workerObserver returns the kernel.Observer of worker node's run: its
// turns and events go to the log of stem, and every hook on to inner
// (nil: none). Without stream logs it returns inner.
func (s *streams) workerObserver(node NodeID, stem string, inner kernel.Observer) kernel.Observer {
	if s == nil {
		return inner
	}
	return streamObserver{s: s, stem: stem, node: node, passObserver: passObserver{inner}}
}

func (o streamObserver) TurnStarted(ctx context.Context, t kernel.TurnStart) (context.Context, error) {
	o.s.add(o.stem, StreamRecord{Kind: StreamTurnStarted, Node: o.node, Run: t.RunID, Model: t.RequestedModel})
	return o.passObserver.TurnStarted(ctx, t)
}

func (o streamObserver) Event(ctx context.Context, e contract.EnvironmentEvent) error {
	o.s.add(o.stem, eventRecord(o.node, e))
	return o.passObserver.Event(ctx, e)
}

func (o streamObserver) TurnEnded(ctx context.Context, t kernel.TurnEnd) error {
	o.s.add(o.stem, turnEndRecord(o.node, t))
	return o.passObserver.TurnEnded(ctx, t)
}

// eventRecord is the stream line of one durable event: its type and id,
// and the text of a text delta. Provider payloads stay out (they may
// carry what a log must not).
func eventRecord(node NodeID, e contract.EnvironmentEvent) StreamRecord {
	r := StreamRecord{Kind: StreamEvent, Node: node, Event: e.Type}
	if e.ID != nil {
		r.EventID = *e.ID
	}
	if n := e.Normalized; n != nil && n.MessagePartUpdated != nil && n.MessagePartUpdated.Delta != nil {
		r = r.withText(*n.MessagePartUpdated.Delta)
	}
	return r
}

// turnEndRecord is the stream line of a turn's end: its terminal and
// the tokens it reported (unknown ones absent).
func turnEndRecord(node NodeID, t kernel.TurnEnd) StreamRecord {
	r := StreamRecord{Kind: StreamTurnEnded, Node: node, Run: t.RunID, Terminal: string(t.Terminal), Model: t.Served.Model}
	r.InputTokens, r.OutputTokens = knownTokens(t.Usage.InputTokens), knownTokens(t.Usage.OutputTokens)
	return r
}

func knownTokens(q ledger.Amount[int64]) *int64 {
	if !q.Known() {
		return nil
	}
	v := q.Value
	return &v
}
