package kernel_test

import (
	"context"
	"testing"
	"time"

	"github.com/agentrt/agentrt/kernel"
	"github.com/agentrt/agentrt/store"
)

// A run whose delivery another run judges (Request.JudgedBy) names that
// judge in its record while it still runs, not only once it ended: a
// run cut off by a killed process stays "running" in the store for
// ever, and its record must still say where its delivery is decided.
func TestJudgedByIsRecordedWhileTheRunRuns(t *testing.T) {
	req := exampleRequest("judged", `{"turns":[{"steps":[{"text":"started "},{"delayMs":600000},{"text":"never"}]}]}`)
	req.Check, req.JudgedBy = nil, "supervise run r, node r:s1"
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		_, _ = kernel.Execute(ctx, req)
	}()
	defer func() { cancel(); <-done }()
	var rec *kernel.RunRecord
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		r, err := kernel.ReadRun(context.Background(), req.Store, "judged")
		if err == nil && r.Events > 0 {
			rec = r
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the run never recorded an event: %v", err)
		}
	}
	if rec.Status != store.StatusRunning || rec.Exact == nil {
		t.Fatalf("run %s %s, record %+v: want a running exact run", rec.ID, rec.Status, rec.Exact)
	}
	if rec.Exact.JudgedBy != req.JudgedBy || rec.Exact.Delivered != nil {
		t.Errorf("a running run's record: judgedBy %q delivered %v, want judged by %q, delivery unknown", rec.Exact.JudgedBy, rec.Exact.Delivered, req.JudgedBy)
	}
}
