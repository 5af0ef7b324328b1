package sidecar

import (
	"context"
	"encoding/base64"
	"errors"
	"iter"
	"time"

	"github.com/agentrt/agentrt/contract/wire"
)

// MaxOutputCursors bounds the output cursors a server keeps (each holds
// at most one answer's bytes and one chunk, and one goroutine reading
// the provider's stream).
const MaxOutputCursors = 64

// cursorKey names one stream of one process.
type cursorKey struct {
	env    string
	pid    int64
	stream string
}

// streamItem is one element of a provider's output stream, or its end.
type streamItem struct {
	chunk []byte
	err   error
	end   bool
}

// errCursorGone: the server stopped following the stream (the cursor was
// evicted or the server is closing) before it ended; the client asks
// again.
var errCursorGone = errors.New("the server stopped following this output stream")

// outputCursor follows one output stream from where the last read of it
// ended, so that the next read — at the offset the last one ended, or at
// the same offset again when its answer was lost — costs what it
// returns instead of a replay of the stream up to its offset. A provider
// replays a stream from its start on every iteration; the cursor is one
// iteration, read by a goroutine into items (one item ahead at most).
type outputCursor struct {
	key    cursorKey
	lock   chan struct{} // one slot: held by the read using the cursor
	items  chan streamItem
	cancel context.CancelFunc

	// Guarded by lock.
	start int64  // the stream offset of buf[0]
	buf   []byte // bytes of the stream from start on, not yet dropped
	ended bool   // items is closed: the stream ended (or failed: err)
	err   error
	used  time.Time
}

// openCursor starts iterating the stream open returns, on a context of
// the server's that only eviction or Close ends.
func (s *Server) openCursor(key cursorKey, open func(context.Context) iter.Seq2[[]byte, error]) *outputCursor {
	ctx, cancel := context.WithCancel(s.base)
	c := &outputCursor{key: key, lock: make(chan struct{}, 1), items: make(chan streamItem, 1), cancel: cancel, used: time.Now()}
	seq := open(ctx)
	go func() {
		defer close(c.items)
		for chunk, err := range seq {
			select {
			case c.items <- streamItem{chunk: chunk, err: err}:
			case <-ctx.Done():
				return
			}
			if err != nil {
				return
			}
		}
		select {
		case c.items <- streamItem{end: true}:
		case <-ctx.Done():
		}
	}()
	return c
}

// cursorAt returns the cursor of key, locked, positioned so that offset
// is at or after its start: the kept one when it can serve offset, else
// a new one from the stream's start (a read before what the kept one
// dropped replays once). It answers nil when ctx ends first.
func (s *Server) cursorAt(ctx context.Context, key cursorKey, offset int64, open func(context.Context) iter.Seq2[[]byte, error]) *outputCursor {
	s.cmu.Lock()
	c := s.cursors[key]
	s.cmu.Unlock()
	if c != nil {
		select {
		case c.lock <- struct{}{}:
		case <-ctx.Done():
			return nil
		}
		if offset >= c.start && c.err == nil {
			return c
		}
		<-c.lock
	}
	fresh := s.openCursor(key, open)
	fresh.lock <- struct{}{}
	s.keepCursor(fresh)
	return fresh
}

// keepCursor records c as key's cursor, replacing (and ending) the one
// it had, and evicts cursors idle for AbandonAfter and, past
// MaxOutputCursors, the least recently used idle ones.
func (s *Server) keepCursor(c *outputCursor) {
	s.cmu.Lock()
	defer s.cmu.Unlock()
	if old := s.cursors[c.key]; old != nil {
		old.cancel()
	}
	s.cursors[c.key] = c
	now := time.Now()
	for len(s.cursors) > 0 {
		var lru *outputCursor
		for k, o := range s.cursors {
			if o == c {
				continue
			}
			select {
			case o.lock <- struct{}{}:
			default:
				continue // in use
			}
			if now.Sub(o.used) >= s.opts.AbandonAfter {
				delete(s.cursors, k)
				o.cancel()
			} else if lru == nil || o.used.Before(lru.used) {
				lru = o
			}
			<-o.lock
		}
		if len(s.cursors) <= MaxOutputCursors || lru == nil {
			return
		}
		delete(s.cursors, lru.key)
		lru.cancel()
	}
}

// dropCursor forgets c (its stream failed) and ends its goroutine.
func (s *Server) dropCursor(c *outputCursor) {
	s.cmu.Lock()
	if s.cursors[c.key] == c {
		delete(s.cursors, c.key)
	}
	s.cmu.Unlock()
	c.cancel()
}

// dropCursorsOf ends the cursors of environment env's streams (it was
// destroyed).
func (s *Server) dropCursorsOf(env string) {
	s.cmu.Lock()
	defer s.cmu.Unlock()
	for k, c := range s.cursors {
		if k.env == env {
			delete(s.cursors, k)
			c.cancel()
		}
	}
}

// next waits until deadline for the stream's next item and applies it;
// false when none came in time.
func (c *outputCursor) next(ctx context.Context, deadline <-chan time.Time) bool {
	select {
	case it, ok := <-c.items:
		switch {
		case !ok:
			c.ended, c.err = true, errCursorGone
		case it.end:
			c.ended = true
		case it.err != nil:
			c.ended, c.err = true, it.err
		default:
			c.buf = append(c.buf, it.chunk...)
		}
		return true
	case <-deadline:
	case <-ctx.Done():
	}
	return false
}

// read answers the stream's bytes from offset on: what is there (at most
// wire.MaxExactChunkBytes), else what arrives within wait, collecting
// for outputBatch more after the first byte. The cursor keeps the bytes
// from offset on, so a re-sent read at the same offset gets the same
// bytes. err is the stream's failure, once every byte before it was
// answered. c is locked by the caller.
func (c *outputCursor) read(ctx context.Context, offset int64, wait time.Duration) (chunk wire.ExactOutputChunk, err error) {
	c.used = time.Now()
	waitEnd := time.NewTimer(wait)
	defer waitEnd.Stop()
	// Drop what the client has: everything before offset.
	for c.start+int64(len(c.buf)) < offset && !c.ended {
		c.start += int64(len(c.buf))
		c.buf = c.buf[:0]
		if !c.next(ctx, waitEnd.C) {
			break
		}
	}
	if have := c.start + int64(len(c.buf)); have <= offset {
		c.start, c.buf = have, c.buf[:0]
	} else {
		c.buf = c.buf[offset-c.start:]
		c.start = offset
	}
	if c.start < offset { // the stream ended before offset, or wait passed
		if c.err != nil {
			return wire.ExactOutputChunk{}, c.err
		}
		return wire.ExactOutputChunk{Offset: offset, End: c.ended && c.err == nil}, nil
	}
	var batch *time.Timer
	for len(c.buf) < wire.MaxExactChunkBytes && !c.ended {
		deadline := waitEnd.C
		if len(c.buf) > 0 {
			if batch == nil {
				batch = time.NewTimer(outputBatch)
				defer batch.Stop()
			}
			deadline = batch.C
		}
		if !c.next(ctx, deadline) {
			break
		}
	}
	n := min(len(c.buf), wire.MaxExactChunkBytes)
	if n == 0 && c.err != nil {
		return wire.ExactOutputChunk{}, c.err
	}
	end := c.ended && c.err == nil && n == len(c.buf)
	return wire.ExactOutputChunk{Offset: offset, Data: base64.StdEncoding.EncodeToString(c.buf[:n]), End: end}, nil
}
