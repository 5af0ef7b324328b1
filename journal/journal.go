package journal

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"

	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/internal/flock"
	"github.com/agentrt/agentrt/internal/regularfile"
)

// DefaultMaxRecordBytes bounds one record's canonical form unless
// Options.MaxRecordBytes says otherwise.
const DefaultMaxRecordBytes = 1 << 20

// maxGroupBytes bounds what one group commit writes: a leader takes queued
// batches up to this size (always at least one), leaving the rest for the
// next commit.
const maxGroupBytes = 4 << 20

// maxKeptQueue bounds the queue's backing array a commit that empties
// the queue keeps for the next batches.
const maxKeptQueue = 64

// recordSizeHint is the room Append reserves per record before encoding
// a batch: the size of a typical record, not a bound.
const recordSizeHint = 512

// Options configure Open and Read. The zero value is the default.
type Options struct {
	// MaxRecordBytes bounds the canonical form of one record, newline
	// excluded: Append refuses a longer one and readers report a longer
	// line as corrupt without reading it into memory. 0 means
	// DefaultMaxRecordBytes; a negative value is refused.
	MaxRecordBytes int
	// CreateDir makes Open create missing parent directories (mode 0700).
	// Otherwise the parent directory must exist. Read ignores it.
	CreateDir bool
	// NoSync makes Append return once a batch is written, without an
	// fsync, and Open skip making the file's directory entry durable. It
	// is for projections and observation logs whose last lines a crash
	// may lose (the truth is in another, synced journal): one writer and
	// one torn-tail repair, without a disk flush per append. A repair's
	// truncation is still synced. Read ignores it.
	NoSync bool
}

func (o Options) recordLimit() (int, error) {
	switch {
	case o.MaxRecordBytes < 0:
		return 0, fmt.Errorf("%w: MaxRecordBytes %d is negative", ErrInvalidOptions, o.MaxRecordBytes)
	case o.MaxRecordBytes == 0:
		return DefaultMaxRecordBytes, nil
	}
	return o.MaxRecordBytes, nil
}

// Recovery says what Open found, for the caller to log.
type Recovery struct {
	// TornBytes is how many bytes of a torn final line Open truncated.
	TornBytes int64
	// Lines is how many lines the file held after the repair: the
	// sequence number of its last line, good or corrupt.
	Lines int64
}

// Journal is an open, locked journal file. Its methods are safe for
// concurrent use.
type Journal struct {
	path     string
	f        *os.File
	limit    int
	noSync   bool
	recovery Recovery

	// token is held by the one goroutine writing and syncing a group.
	token chan struct{}

	mu      sync.Mutex
	queue   []*batch
	next    int64 // sequence number of the next line
	size    int64 // bytes committed
	err     error // the *WriteError that poisoned the journal
	closed  bool
	commits int64 // fsyncs that committed at least one batch
	wbuf    []byte
}

// batch is one Append call's lines, waiting to be committed.
type batch struct {
	data []byte
	// buf is the pooled buffer data was encoded into (getBuffer), given
	// back once the batch is written.
	buf   *[]byte
	n     int64
	first int64
	taken bool // a committer owns it; it can no longer be withdrawn
	err   error
	done  chan struct{}
	// pending is what Enqueue returns for it, allocated with it.
	pending Pending
}

// Open opens the journal at path, creating it (mode 0600) if absent, takes
// its exclusive lock and repairs a torn tail (see the package doc); the
// repair is reported by [Journal.Recovery]. If another open journal holds
// the lock, Open returns a [*LockedError]. Open reads the whole file once,
// with a fixed buffer, to count its lines. Where the system offers no
// flock (Windows, Solaris, AIX), Open fails rather than write unlocked.
func Open(path string, opts Options) (*Journal, error) {
	limit, err := opts.recordLimit()
	if err != nil {
		return nil, err
	}
	var newDirs []string // directories Open creates, innermost first
	if opts.CreateDir {
		for dir := filepath.Dir(path); ; dir = filepath.Dir(dir) {
			if _, err := os.Stat(dir); err == nil || dir == filepath.Dir(dir) {
				break
			}
			newDirs = append(newDirs, dir)
		}
		if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
			return nil, err
		}
	}
	f, _, err := regularfile.OpenFile(path, os.O_RDWR|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return nil, err
	}
	j, err := open(path, f, limit)
	if err != nil {
		f.Close()
		return nil, err
	}
	if opts.NoSync {
		j.noSync = true
		return j, nil
	}
	// Make the file's directory entry durable (it may have been created
	// now, or by a process that died before it could), and those of the
	// directories created for it.
	holders := []string{filepath.Dir(path)}
	for _, dir := range newDirs {
		holders = append(holders, filepath.Dir(dir))
	}
	for _, dir := range holders {
		if err := syncDir(dir); err != nil {
			j.Close()
			return nil, err
		}
	}
	return j, nil
}

func open(path string, f *os.File, limit int) (*Journal, error) {
	info, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !info.Mode().IsRegular() {
		return nil, fmt.Errorf("journal: %s is not a regular file", path)
	}
	if err := flock.TryLock(f); err != nil {
		if errors.Is(err, flock.ErrHeld) {
			return nil, &LockedError{Path: path, PID: lockHolder(f)}
		}
		return nil, fmt.Errorf("journal: lock %s: %w", path, err)
	}
	keep, lines, err := repairPoint(f, limit)
	if err != nil {
		return nil, err
	}
	size, err := f.Seek(0, io.SeekEnd)
	if err != nil {
		return nil, err
	}
	if keep < size {
		if err := f.Truncate(keep); err != nil {
			return nil, err
		}
		if err := f.Sync(); err != nil {
			return nil, err
		}
	}
	return &Journal{
		path:     path,
		f:        f,
		limit:    limit,
		recovery: Recovery{TornBytes: size - keep, Lines: lines},
		token:    make(chan struct{}, 1),
		next:     lines + 1,
		size:     keep,
	}, nil
}

// repairPoint scans the file and returns how many bytes to keep and how
// many lines those bytes hold: everything up to the last '\n', minus the
// last complete line if it is a torn tail (see isTornTail), exactly what
// the readers ignore.
func repairPoint(f *os.File, limit int) (keep, lines int64, err error) {
	buf := make([]byte, readBufferSize)
	// ends holds the offsets just past the last three '\n', newest first.
	var ends [3]int64
	var off int64
	for {
		n, err := f.ReadAt(buf, off)
		chunk := buf[:n]
		c := bytes.Count(chunk, []byte{'\n'})
		lines += int64(c)
		var room [len(ends)]int64
		found := room[:0]
		for i := len(chunk); len(found) < min(c, len(ends)); {
			i = bytes.LastIndexByte(chunk[:i], '\n')
			found = append(found, off+int64(i)+1)
		}
		copy(ends[len(found):], ends[:len(ends)-len(found)])
		copy(ends[:], found)
		off += int64(n)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return 0, 0, err
		}
	}
	if lines == 0 {
		return 0, 0, nil
	}
	good := func(start, end int64) (bool, error) {
		if end-1-start > int64(limit) {
			return false, nil
		}
		line := make([]byte, end-1-start)
		if _, err := f.ReadAt(line, start); err != nil {
			return false, err
		}
		_, bad := decodeRecord(line)
		return bad == nil, nil
	}
	// The last complete line spans [ends[1], ends[0]); the one before it
	// [ends[2], ends[1]). Offsets past the lines that exist are 0.
	ok, err := good(ends[1], ends[0])
	if err != nil || ok {
		return ends[0], lines, err
	}
	afterGood := lines == 1
	if !afterGood {
		if afterGood, err = good(ends[2], ends[1]); err != nil {
			return 0, 0, err
		}
	}
	if isTornTail(afterGood) {
		return ends[1], lines - 1, nil
	}
	return ends[0], lines, nil
}

// Recovery reports what Open repaired.
func (j *Journal) Recovery() Recovery { return j.recovery }

// Path returns the journal's path.
func (j *Journal) Path() string { return j.path }

// Size returns how many bytes of the journal's file are committed: what
// Open kept after its repair, and every batch written since (a batch
// whose write failed is not counted).
func (j *Journal) Size() int64 {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.size
}

// Append writes records as consecutive lines of canonical JSON and returns
// once they are durable (written and fsynced; only written with NoSync),
// with the sequence number of the first. The batch is written with one write, so after a
// crash a later Open finds all of it or a prefix of it, whose torn last line it
// truncates. With no records Append does nothing and returns 0.
//
// A record without canonical form is refused with a [*RecordError], one
// longer than MaxRecordBytes with a [*TooLargeError]; nothing of the batch
// is written. If ctx ends before a commit takes the batch, Append returns
// context.Cause(ctx) and nothing is written; once taken, the batch's
// outcome is awaited. After a [*WriteError] every Append fails with it.
func (j *Journal) Append(ctx context.Context, records ...canonjson.Value) (firstSeq int64, err error) {
	if len(records) == 0 {
		return 0, nil
	}
	if ctx.Err() != nil {
		return 0, context.Cause(ctx)
	}
	b, err := j.enqueue(records)
	if err != nil {
		return 0, err
	}
	return j.await(ctx, b, true)
}

// Pending is a batch [Journal.Enqueue] queued: its place in the file is
// fixed, its durability is not yet known.
type Pending struct {
	j *Journal
	b *batch
}

// Enqueue queues records as one batch for the next group commit, as
// Append does, and returns without waiting for it: the batch's place in
// the journal is fixed when Enqueue returns (batches are written in the
// order Enqueue and Append queued them, so a later batch is never durable
// without every earlier one), and [Pending.Wait] returns once it is
// durable. A caller that must keep its own state in the journal's order
// queues under its own lock and waits after releasing it, so concurrent
// callers share fsyncs. Errors are Append's; with no records the Pending
// is done at once with sequence number 0.
func (j *Journal) Enqueue(records ...canonjson.Value) (*Pending, error) {
	if len(records) == 0 {
		return &Pending{}, nil
	}
	b, err := j.enqueue(records)
	if err != nil {
		return nil, err
	}
	return b.pend(j), nil
}

// Wait returns once the batch is durable (written and fsynced; only
// written with NoSync), with the sequence number of its first record, or
// the commit's error. While it waits it may commit the group itself, as
// Append does. A queued batch is never withdrawn (a later one may already
// rely on its place): if ctx ends first, Wait returns context.Cause(ctx)
// and the batch's outcome is unknown to this caller (a later commit
// writes it, or Close fails it). Wait may be called more than once; once
// the batch's outcome is known, Wait returns it even with an ended ctx.
func (p *Pending) Wait(ctx context.Context) (firstSeq int64, err error) {
	if p.b == nil {
		return 0, nil
	}
	return p.j.await(ctx, p.b, false)
}

// AppendOf is Append of Go values: each record is the canonical form of
// one of records as [canonjson.AppendCanonicalOf] writes it (the form
// of its [canonjson.ToValue]), encoded without building a Value tree.
// Errors are Append's.
func (j *Journal) AppendOf(ctx context.Context, records ...any) (firstSeq int64, err error) {
	if len(records) == 0 {
		return 0, nil
	}
	if ctx.Err() != nil {
		return 0, context.Cause(ctx)
	}
	b, err := j.enqueueWith(len(records), func(data []byte, i int) ([]byte, error) {
		return canonjson.AppendCanonicalOf(data, records[i])
	})
	if err != nil {
		return 0, err
	}
	return j.await(ctx, b, true)
}

// EnqueueOf is Enqueue of Go values, encoded as AppendOf encodes them.
func (j *Journal) EnqueueOf(records ...any) (*Pending, error) {
	if len(records) == 0 {
		return &Pending{}, nil
	}
	b, err := j.enqueueWith(len(records), func(data []byte, i int) ([]byte, error) {
		return canonjson.AppendCanonicalOf(data, records[i])
	})
	if err != nil {
		return nil, err
	}
	return b.pend(j), nil
}

// pend returns b's Pending, of journal j.
func (b *batch) pend(j *Journal) *Pending {
	b.pending = Pending{j: j, b: b}
	return &b.pending
}

// enqueue encodes records into one batch and queues it.
func (j *Journal) enqueue(records []canonjson.Value) (*batch, error) {
	return j.enqueueWith(len(records), func(data []byte, i int) ([]byte, error) {
		return canonjson.AppendCanonical(data, records[i])
	})
}

// enqueueWith encodes n records into one batch, record i appended to
// data by encode, and queues it.
func (j *Journal) enqueueWith(n int, encode func(data []byte, i int) ([]byte, error)) (*batch, error) {
	buf := getBuffer(min(n, 64) * recordSizeHint)
	data := *buf
	var err error
	for i := range n {
		start := len(data)
		data, err = encode(data, i)
		if err != nil {
			putBuffer(buf, data)
			return nil, &RecordError{Index: i, Err: err}
		}
		if size := len(data) - start; size > j.limit {
			putBuffer(buf, data)
			return nil, &TooLargeError{Index: i, Size: size, Limit: j.limit}
		}
		data = append(data, '\n')
	}
	b := &batch{data: data, buf: buf, n: int64(n), done: make(chan struct{})}
	j.mu.Lock()
	defer j.mu.Unlock()
	if err := j.stateErr(); err != nil {
		putBuffer(buf, data)
		return nil, err
	}
	j.queue = append(j.queue, b)
	return b, nil
}

// maxPooledBuffer bounds the encoding buffers kept for reuse: a batch
// larger than it (a rare huge record) leaves its buffer to the garbage
// collector rather than pin it.
const maxPooledBuffer = 64 << 10

// buffers holds emptied encoding buffers (*[]byte): a batch's buffer is
// dead once its group is written, so the next batch encodes into it
// instead of allocating its own (most of a record's allocation).
var buffers sync.Pool

// getBuffer returns an empty buffer with room for at least size bytes:
// a pooled one when there is one, else a new one, so that encoding does
// not grow it a doubling at a time from nothing.
func getBuffer(size int) *[]byte {
	if p, ok := buffers.Get().(*[]byte); ok {
		if cap(*p) < size {
			*p = make([]byte, 0, size)
		}
		*p = (*p)[:0]
		return p
	}
	data := make([]byte, 0, size)
	return &data
}

// putBuffer gives buf back for reuse, holding data (what was encoded
// into it, perhaps grown past it); nothing may use either afterwards.
func putBuffer(buf *[]byte, data []byte) {
	if buf == nil || cap(data) > maxPooledBuffer {
		return
	}
	*buf = data[:0]
	buffers.Put(buf)
}

// await waits for b's outcome, committing groups itself when the commit
// token is free. If ctx ends first, a withdrawable batch no commit has
// taken yet is withdrawn and context.Cause(ctx) returned; otherwise
// (withdraw false) the cause is returned with b left queued. An outcome
// already known when await is called is returned whatever ctx is.
func (j *Journal) await(ctx context.Context, b *batch, withdraw bool) (int64, error) {
	select {
	case <-b.done:
		// Known already: the outcome, whatever ctx is (the select below
		// could take ctx's end instead).
		return b.first, b.err
	default:
	}
	select {
	case <-b.done:
	case j.token <- struct{}{}:
		// Whoever held the token before committed or failed every batch
		// it took; this goroutine now commits whatever is queued, its own
		// batch included unless an earlier commit already took it.
		for !j.commit(b) {
		}
		<-j.token
	case <-ctx.Done():
		if !withdraw {
			return 0, context.Cause(ctx)
		}
		if j.withdraw(b) {
			return 0, context.Cause(ctx)
		}
	}
	<-b.done
	return b.first, b.err
}

// stateErr is why nothing more can be appended, if anything; j.mu is held.
func (j *Journal) stateErr() error {
	if j.closed {
		return ErrClosed
	}
	return j.err
}

// withdraw removes b from the queue if no commit has taken it yet.
func (j *Journal) withdraw(b *batch) bool {
	j.mu.Lock()
	defer j.mu.Unlock()
	if b.taken {
		return false
	}
	for i, q := range j.queue {
		if q == b {
			j.queue = append(j.queue[:i], j.queue[i+1:]...)
			break
		}
	}
	return true
}

// commit writes and syncs one group of queued batches; the caller holds
// the token. It reports whether own is done (committed or failed), so its
// caller keeps committing groups until its own batch is settled.
func (j *Journal) commit(own *batch) bool {
	j.mu.Lock()
	var group []*batch
	total := 0
	taken := 0
	for taken < len(j.queue) && (taken == 0 || total+len(j.queue[taken].data) <= maxGroupBytes) {
		b := j.queue[taken]
		j.queue[taken] = nil
		b.taken = true
		group = append(group, b)
		total += len(b.data)
		taken++
	}
	switch {
	case taken < len(j.queue):
		j.queue = j.queue[taken:]
	case cap(j.queue) > maxKeptQueue:
		j.queue = nil // let a long queue's backing array go
	default:
		j.queue = j.queue[:0] // the next batches queue without allocating
	}
	err := j.stateErr()
	if err == nil {
		for _, b := range group {
			b.first = j.next
			j.next += b.n
		}
	}
	out := j.wbuf[:0]
	j.mu.Unlock()

	if err == nil && len(group) > 0 {
		if len(group) == 1 {
			out = group[0].data
		} else {
			for _, b := range group {
				out = append(out, b.data...)
			}
		}
		err = j.write(out)
	}

	j.mu.Lock()
	switch {
	case err == nil && len(group) > 0:
		j.size += int64(len(out))
		j.commits++
	case err != nil && j.err == nil && !errors.Is(err, ErrClosed):
		j.err = err
	}
	if len(group) > 1 && cap(out) <= maxGroupBytes {
		j.wbuf = out[:0]
	}
	j.mu.Unlock()
	for _, b := range group {
		// The batch is written (or failed): its bytes are dead, and no
		// one reads b.data once a commit took it.
		putBuffer(b.buf, b.data)
		b.data, b.buf = nil, nil
		if err != nil {
			b.first, b.err = 0, err
		}
		close(b.done)
	}
	select {
	case <-own.done:
		return true
	default:
		return false
	}
}

// write writes and fsyncs one group (writes only, with NoSync).
func (j *Journal) write(data []byte) error {
	if _, err := j.f.Write(data); err != nil {
		return &WriteError{Path: j.path, Op: "write", Err: err}
	}
	if j.noSync {
		return nil
	}
	if err := j.f.Sync(); err != nil {
		return &WriteError{Path: j.path, Op: "sync", Err: err}
	}
	return nil
}

// Close waits for the commit in progress, fails batches still queued with
// ErrClosed, releases the lock and closes the file. Later calls return nil.
func (j *Journal) Close() error {
	j.mu.Lock()
	if j.closed {
		j.mu.Unlock()
		return nil
	}
	j.closed = true
	j.mu.Unlock()

	j.token <- struct{}{}
	defer func() { <-j.token }()
	j.mu.Lock()
	queued := j.queue
	j.queue = nil
	j.mu.Unlock()
	for _, b := range queued {
		b.taken, b.err = true, ErrClosed
		close(b.done)
	}
	// The lock is given up before the file is closed: a child forked
	// meanwhile would otherwise keep it until it execs.
	uerr := flock.Unlock(j.f)
	if err := j.f.Close(); err != nil {
		return err
	}
	if uerr != nil {
		return fmt.Errorf("journal: unlocking %s: %w", j.path, uerr)
	}
	return nil
}
