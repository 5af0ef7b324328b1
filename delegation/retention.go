package delegation

import (
	"cmp"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/agentrt/agentrt/store"
)

// kickEviction asks the evictor to apply Config.MaxTerminalRecords.
func (q *Queue) kickEviction() {
	if q.cfg.MaxTerminalRecords == 0 {
		return
	}
	select {
	case q.evictKick <- struct{}{}:
	default:
	}
}

// evictor applies the retention cap whenever a delegation ended, one
// pass at a time, until the queue closes.
func (q *Queue) evictor() {
	defer q.wg.Done()
	for {
		select {
		case <-q.base.Done():
			return
		case <-q.evictKick:
		}
		if q.Failure() == nil {
			q.evict()
		}
	}
}

// evict removes the delegations that ended longest ago beyond
// Config.MaxTerminalRecords, with their run dirs; a pending or running
// one is never removed (the store refuses it too). The listing is
// bounded: beyond the cap only delegations still live remain.
func (q *Queue) evict() {
	ctx, cancel := q.storeCtx()
	defer cancel()
	runs, err := q.cfg.Store.ListRuns(ctx, store.ListOptions{Kind: Kind})
	if err != nil {
		q.cfg.Logger.Warn("delegation: listing for eviction", "err", err)
		return
	}
	type ended struct {
		id, dir string
		at      time.Time
	}
	var done []ended
	for _, r := range runs {
		if !r.Status.Terminal() {
			continue
		}
		e := ended{id: r.ID, at: r.UpdatedAt}
		if d, err := decodeRun(r); err == nil {
			e.dir = d.RunDir
			if d.EndedAt != nil {
				e.at = *d.EndedAt
			}
		}
		done = append(done, e)
	}
	if len(done) <= q.cfg.MaxTerminalRecords {
		return
	}
	// Newest end first; ties by id, so every queue picks the same ones.
	slices.SortFunc(done, func(a, b ended) int {
		if c := b.at.Compare(a.at); c != 0 {
			return c
		}
		return cmp.Compare(b.id, a.id)
	})
	for _, e := range done[q.cfg.MaxTerminalRecords:] {
		dctx, dcancel := q.storeCtx()
		err := q.cfg.Store.DeleteRun(dctx, e.id)
		dcancel()
		switch {
		case err == nil:
			q.removeRunDir(e.dir)
			q.cfg.Logger.Info("delegation evicted", "task_id", e.id)
		case errors.Is(err, store.ErrNotFound):
			// Another queue on the store evicted it first.
		default:
			q.cfg.Logger.Warn("delegation: evicting", "task_id", e.id, "err", err)
			return
		}
	}
}

// removeRunDir removes an evicted delegation's journal, only when it
// lies inside this queue's Config.RunDir.
func (q *Queue) removeRunDir(dir string) {
	if dir == "" {
		return
	}
	root, err := filepath.Abs(q.cfg.RunDir)
	if err != nil {
		return
	}
	abs, err := filepath.Abs(dir)
	if err != nil || filepath.Dir(abs) != root || !strings.HasPrefix(filepath.Base(abs), "dlg") {
		return
	}
	if err := os.RemoveAll(abs); err != nil {
		q.cfg.Logger.Warn("delegation: removing an evicted run dir", "dir", abs, "err", err)
	}
}
