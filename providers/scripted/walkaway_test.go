package scripted_test

import (
	"testing"
	"time"

	"github.com/agentrt/agentrt/contract"
	"github.com/agentrt/agentrt/providers/scripted"
)

// A reader that stops reading a turn before it ended walks away from it:
// the turn is cancelled (as a remote server cancels the turn of a caller
// that went away), and a stream that re-attaches to it by its turn id
// replays it to its cancelled terminal event — never a stream that stops
// without one (the contract: a turn's stream ends with its terminal
// event), which a process taking the work over could not tell from a
// broken provider.
func TestReaderWalkingAwayLeavesACancelledTurn(t *testing.T) {
	sc, err := scripted.ParseScript([]byte(`{"turns":[{"repeat":true,"steps":[{"text":"working "},{"delayMs":60000},{"text":"done"}]}]}`))
	if err != nil {
		t.Fatal(err)
	}
	p := scripted.New(sc, scripted.Options{})
	env, err := p.Create(t.Context(), &contract.CreateInput{})
	if err != nil {
		t.Fatal(err)
	}
	prompt, turnID := "go", "the-turn"
	in := &contract.TurnInput{Prompt: &prompt, TurnID: &turnID}
	start := time.Now()
	for _, err := range env.Stream(t.Context(), in) {
		if err != nil {
			t.Fatal(err)
		}
		break // the first event: the reader walks away
	}
	if d := time.Since(start); d > 30*time.Second {
		t.Fatalf("walking away took %s: the turn played on to its end", d)
	}
	var last contract.EnvironmentEvent
	n := 0
	for ev, err := range env.Stream(t.Context(), in) {
		if err != nil {
			t.Fatalf("re-attaching: %v", err)
		}
		last, n = ev, n+1
	}
	if kind, ok := contract.EnvironmentEventTerminal(last); !ok || kind != contract.TerminalCancelled {
		t.Fatalf("the re-attached turn's %d events end with %+v; want its cancelled terminal event", n, last)
	}
	if p.Turns() != 1 {
		t.Errorf("%d turns played; want 1: re-attaching replays the turn", p.Turns())
	}
}
