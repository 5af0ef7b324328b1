package fleet

import (
	"context"
	"fmt"
	"sort"
)

// QueueCount is how many jobs of one queue are in one River state.
type QueueCount struct {
	Queue string
	// State is River's job state: available, scheduled, running,
	// retryable, completed, cancelled, discarded.
	State string
	Count int64
}

// Status is a view of the fleet's queues.
type Status struct {
	// Jobs counts the fleet's jobs by queue and state.
	Jobs []QueueCount
}

// Depth returns how many jobs wait to run (available, scheduled or
// retryable) across queues.
func (s Status) Depth() int64 {
	var n int64
	for _, c := range s.Jobs {
		switch c.State {
		case "available", "scheduled", "retryable":
			n += c.Count
		}
	}
	return n
}

// Status reads the queue view from River's tables.
func (f *Fleet) Status(ctx context.Context) (Status, error) {
	var out Status
	rows, err := f.pool.Query(ctx, `SELECT queue, state::text, count(*) FROM `+f.schema+`.river_job WHERE kind = $1 GROUP BY queue, state`, RunArgs{}.Kind())
	if err != nil {
		return Status{}, fmt.Errorf("fleet: status: %w", err)
	}
	for rows.Next() {
		var c QueueCount
		if err := rows.Scan(&c.Queue, &c.State, &c.Count); err != nil {
			rows.Close()
			return Status{}, fmt.Errorf("fleet: status: %w", err)
		}
		out.Jobs = append(out.Jobs, c)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return Status{}, fmt.Errorf("fleet: status: %w", err)
	}
	sort.Slice(out.Jobs, func(i, j int) bool {
		a, b := out.Jobs[i], out.Jobs[j]
		return a.Queue < b.Queue || a.Queue == b.Queue && a.State < b.State
	})
	return out, nil
}
