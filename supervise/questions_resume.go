package supervise

import (
	"context"
	"errors"
	"io/fs"
)

// replayQuestions reads back, on resume, the questions earlier processes
// of this run asked (the run dir's coordination log): each is listed
// again — answered or deferred as its delivered decision says, else
// expired, since its asker ended with that process — and the questions
// this process asks are numbered after them, so a question id never
// repeats in the log. A log that is missing or unreadable leaves the
// list empty (it is evidence, not state).
func (c *Coordinator) replayQuestions(ctx context.Context) {
	if c.log.dir == "" {
		return
	}
	recs, _, err := ReadCoordinationLog(ctx, c.log.dir)
	if err != nil {
		if !errors.Is(err, fs.ErrNotExist) {
			c.logger.Warn("supervise: reading the questions of the resumed run", "err", err)
		}
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	byID := map[string]*question{}
	for _, r := range recs {
		switch {
		case r.Kind == CoordQuestion && r.Question != nil:
			// Every record counts, even one repeating an id (an older
			// process's), so new ids come after all of them.
			q := &question{Question: *r.Question, to: c.self, earlier: true}
			if q.To != "" {
				q.to = q.To // a nested manager's question
			}
			q.Status = "expired"
			byID[q.ID] = q
			c.questions = append(c.questions, q)
		case r.Kind == CoordDecision && r.Decision != nil && r.Delivered:
			q := byID[r.QuestionID]
			if q == nil {
				continue
			}
			d := *r.Decision
			q.decision = &d
			switch d.Kind {
			case "answer":
				q.Status = "answered"
			case "defer":
				q.Status = "deferred"
			}
		}
	}
}
