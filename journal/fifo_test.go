//go:build unix

package journal_test

import (
	"context"
	"errors"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/agentrt/agentrt/internal/regularfile"
	"github.com/agentrt/agentrt/journal"
)

// A FIFO in a journal's place (no one writing it) is refused at once
// with *regularfile.NotRegularError: a resume reading it never blocks.
func TestReadRefusesAFIFO(t *testing.T) {
	path := filepath.Join(t.TempDir(), "spawn-journal.jsonl")
	if err := syscall.Mkfifo(path, 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	done := make(chan error, 1)
	go func() {
		var first error
		for _, err := range journal.Read(ctx, path, 0, journal.Options{}) {
			first = err
			break
		}
		done <- first
	}()
	select {
	case err := <-done:
		var nr *regularfile.NotRegularError
		if !errors.As(err, &nr) {
			t.Errorf("Read of a FIFO: %v, want *regularfile.NotRegularError", err)
		}
	case <-ctx.Done():
		t.Fatal("Read of a FIFO blocked")
	}
}

// A FIFO in a journal's place is refused by Open too (its tail is read
// to find a torn line, which would block for ever), at once.
func TestOpenRefusesAFIFO(t *testing.T) {
	path := filepath.Join(t.TempDir(), "spawn-journal.jsonl")
	if err := syscall.Mkfifo(path, 0o600); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		j, err := journal.Open(path, journal.Options{})
		if err == nil {
			j.Close()
		}
		done <- err
	}()
	select {
	case err := <-done:
		var nr *regularfile.NotRegularError
		if !errors.As(err, &nr) {
			t.Errorf("Open of a FIFO: %v, want *regularfile.NotRegularError", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Open of a FIFO blocked")
	}
}
