package chatprovidertest

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/agentrt/agentrt/contract"
	"github.com/agentrt/agentrt/contract/providertest"
	"github.com/agentrt/agentrt/profile"
)

// Endpoint is a provider under test over recorded transcripts.
type Endpoint struct {
	// Provider starts a local server playing the named transcript (cycling
	// when cycle is set) and returns a provider over it and a function
	// counting the requests the server received.
	Provider func(t *testing.T, transcript string, cycle bool) (p contract.Provider, requests func() int)
	// Profile is the profile every transcript expects.
	Profile string
	// Transcripts name the recorded scenarios.
	Transcripts Transcripts
	// Want is what the Text transcript reports.
	Want Want
	// ErrStreamBroken is what a dropped stream fails with.
	ErrStreamBroken error
}

// Transcripts name an endpoint's recorded scenarios.
type Transcripts struct {
	// Text completes with text, usage and the requested model.
	Text string
	// ServedOther is served by another model than the requested one.
	ServedOther string
	// UsageMissing completes without the endpoint sending any usage.
	UsageMissing string
	// InBandError ends in an error event inside a 200 stream.
	InBandError string
	// Dropped loses the connection mid-stream.
	Dropped string
	// Hang sends some text, then nothing until the client goes away.
	Hang string
	// UnofferedTool completes with a call of a tool nobody offered.
	UnofferedTool string
}

// Want is the Text transcript's account.
type Want struct {
	Text                      string
	InputTokens, OutputTokens int64
	// Served is the model the Text transcript says served it;
	// ServedOther the one the ServedOther transcript names. The Dropped,
	// Hang and InBandError transcripts name Served before they end.
	Served, ServedOther string
	// PartialUsage is the last usage the Dropped, Hang and InBandError
	// transcripts report before they end (input and output tokens); nil
	// when they report none, so that the turn's usage stays unknown.
	PartialUsage *contract.TokenUsage
	// UnofferedTool is the tool the UnofferedTool transcript calls.
	UnofferedTool string
}

// Terminal is the stream's last event and its terminal kind, failing the
// test when it is not terminal.
func Terminal(t *testing.T, evs []contract.EnvironmentEvent) (contract.EnvironmentEvent, contract.TerminalKind) {
	t.Helper()
	if len(evs) == 0 {
		t.Fatal("no events")
	}
	last := evs[len(evs)-1]
	kind, ok := contract.EnvironmentEventTerminal(last)
	if !ok {
		t.Fatalf("the last event %s is not terminal", last.Type)
	}
	return last, kind
}

// ServedModel is the model an event's effectiveBackend names.
func ServedModel(e contract.EnvironmentEvent) string {
	m, _ := e.Data["effectiveBackend"].Get("model")
	return m.Str()
}

// MustProfile parses a profile, failing the test on error.
func MustProfile(t testing.TB, src string) *profile.Profile {
	t.Helper()
	p, err := profile.Parse([]byte(src))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func (e Endpoint) env(t *testing.T, transcript string) contract.Environment {
	t.Helper()
	p, _ := e.Provider(t, transcript, false)
	env, err := p.Create(t.Context(), &contract.CreateInput{Profile: profile.Ref{Inline: MustProfile(t, e.Profile)}})
	if err != nil {
		t.Fatal(err)
	}
	return env
}

func hello(timeoutMs *int64) *contract.TurnInput {
	prompt := "Say hello."
	return &contract.TurnInput{Prompt: &prompt, TimeoutMs: timeoutMs}
}

// Truthfulness runs the kernel's truthfulness matrix against the
// endpoint, one subtest per fault.
func Truthfulness(t *testing.T, e Endpoint) {
	t.Run("text usage and served model", func(t *testing.T) {
		evs, err := providertest.Collect(e.env(t, e.Transcripts.Text).Stream(t.Context(), hello(nil)))
		if err != nil {
			t.Fatal(err)
		}
		var usage *contract.TokenUsage
		for _, ev := range evs {
			if u, mode, ok := ev.UsageReport(); ok {
				if mode != contract.UsageCumulative {
					t.Errorf("usage mode %q", mode)
				}
				usage = u
			}
			if _, err := contract.Validate(contract.KindEnvironmentEvent, contract.EnvironmentEventSchema, ev); err != nil {
				t.Errorf("event %s: %v", ev.Type, err)
			}
		}
		if usage == nil || usage.InputTokens != e.Want.InputTokens || usage.OutputTokens != e.Want.OutputTokens {
			t.Errorf("usage %+v, want %d in / %d out", usage, e.Want.InputTokens, e.Want.OutputTokens)
		}
		done, kind := Terminal(t, evs)
		if kind != contract.TerminalCompleted || done.Data["text"].Str() != e.Want.Text || ServedModel(done) != e.Want.Served {
			t.Errorf("terminal %v, text %q, served %q", kind, done.Data["text"].Str(), ServedModel(done))
		}
	})
	t.Run("another served model is reported", func(t *testing.T) {
		evs, err := providertest.Collect(e.env(t, e.Transcripts.ServedOther).Stream(t.Context(), hello(nil)))
		if err != nil {
			t.Fatal(err)
		}
		if done, _ := Terminal(t, evs); ServedModel(done) != e.Want.ServedOther {
			t.Errorf("served model on the terminal event %q, want %q", ServedModel(done), e.Want.ServedOther)
		}
	})
	t.Run("missing usage stays unknown", func(t *testing.T) {
		evs, err := providertest.Collect(e.env(t, e.Transcripts.UsageMissing).Stream(t.Context(), hello(nil)))
		if err != nil {
			t.Fatal(err)
		}
		for _, ev := range evs {
			if ev.Usage != nil {
				t.Errorf("event %s carries usage %+v the endpoint never sent", ev.Type, ev.Usage)
			}
		}
		if _, kind := Terminal(t, evs); kind != contract.TerminalCompleted {
			t.Errorf("terminal %v", kind)
		}
	})
	t.Run("in-band error fails", func(t *testing.T) {
		evs, err := providertest.Collect(e.env(t, e.Transcripts.InBandError).Stream(t.Context(), hello(nil)))
		if err != nil {
			t.Fatal(err)
		}
		last, kind := Terminal(t, evs)
		if kind != contract.TerminalFailed || last.Type != "error" {
			t.Errorf("last event %s %v", last.Type, kind)
		}
		e.keptBeforeTheEnd(t, evs[:len(evs)-1])
	})
	t.Run("dropped stream breaks", func(t *testing.T) {
		evs, err := providertest.Collect(e.env(t, e.Transcripts.Dropped).Stream(t.Context(), hello(nil)))
		if !errors.Is(err, e.ErrStreamBroken) {
			t.Fatalf("err %v, want %v", err, e.ErrStreamBroken)
		}
		for _, ev := range evs {
			if _, ok := contract.EnvironmentEventTerminal(ev); ok {
				t.Errorf("a dropped stream emitted terminal event %s", ev.Type)
			}
		}
		e.keptBeforeTheEnd(t, evs)
	})
	t.Run("timeout fails", func(t *testing.T) {
		timeout := int64(100)
		evs, err := providertest.Collect(e.env(t, e.Transcripts.Hang).Stream(t.Context(), hello(&timeout)))
		if err != nil {
			t.Fatal(err)
		}
		last, kind := Terminal(t, evs)
		if kind != contract.TerminalFailed || !strings.Contains(last.Data["error"].Str(), "timeoutMs") {
			t.Errorf("last event %s %v", last.Type, kind)
		}
		if ServedModel(last) != e.Want.Served {
			t.Errorf("the timeout's terminal event names served model %q, want %q", ServedModel(last), e.Want.Served)
		}
		e.keptBeforeTheEnd(t, evs[:len(evs)-1])
	})
	t.Run("cancelled", func(t *testing.T) {
		env := e.env(t, e.Transcripts.Hang)
		ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
		defer cancel()
		var evs []contract.EnvironmentEvent
		for ev, err := range env.Stream(ctx, hello(nil)) {
			if err != nil {
				t.Fatal(err)
			}
			if ev.Type == contract.EventTypeMessagePartUpdated {
				cancel()
			}
			evs = append(evs, ev)
		}
		last, kind := Terminal(t, evs)
		if kind != contract.TerminalCancelled {
			t.Errorf("last event %s", last.Type)
		}
		if ServedModel(last) != e.Want.Served {
			t.Errorf("the cancellation's terminal event names served model %q, want %q", ServedModel(last), e.Want.Served)
		}
		e.keptBeforeTheEnd(t, evs[:len(evs)-1])
	})
	t.Run("a call of a tool nobody offered leaves a warning", func(t *testing.T) {
		evs, err := providertest.Collect(e.env(t, e.Transcripts.UnofferedTool).Stream(t.Context(), hello(nil)))
		if err != nil {
			t.Fatal(err)
		}
		warned := false
		for _, ev := range evs {
			if n := ev.Normalized; n != nil && n.Warning != nil && n.Warning.Code == "tool_call_not_run" {
				name, _ := ev.Data["toolCall"].Get("name")
				warned = warned || name.Str() == e.Want.UnofferedTool
			}
		}
		if !warned {
			t.Errorf("no warning names the call of %s", e.Want.UnofferedTool)
		}
		if _, kind := Terminal(t, evs); kind != contract.TerminalCompleted {
			t.Errorf("terminal %v", kind)
		}
	})
}

// keptBeforeTheEnd checks what a turn that ended early (cut, timed out,
// cancelled, failed in-band) handed over before its end, so that it
// survives the end (ERR-04, RG-02): the served model on an event of its
// own, and the usage reported so far — exactly Want.PartialUsage, none
// when that is nil (unknown stays unknown).
func (e Endpoint) keptBeforeTheEnd(t *testing.T, before []contract.EnvironmentEvent) {
	t.Helper()
	served := ""
	var usage *contract.TokenUsage
	for _, ev := range before {
		if m := ServedModel(ev); m != "" && served == "" {
			served = m
		}
		if u, mode, ok := ev.UsageReport(); ok {
			if mode != contract.UsageCumulative {
				t.Errorf("usage mode %q", mode)
			}
			usage = u
		}
	}
	if served != e.Want.Served {
		t.Errorf("served model reported before the end %q, want %q", served, e.Want.Served)
	}
	switch want := e.Want.PartialUsage; {
	case want == nil && usage != nil:
		t.Errorf("usage %+v reported, but the endpoint sent none", usage)
	case want != nil && (usage == nil || usage.InputTokens != want.InputTokens || usage.OutputTokens != want.OutputTokens):
		t.Errorf("usage before the end %+v, want %d in / %d out", usage, want.InputTokens, want.OutputTokens)
	}
}

// Refusal is one create or turn the provider must refuse before any
// request.
type Refusal struct {
	Name string
	// Profile is a create's profile; Create adjusts the create input.
	Profile string
	Create  func(in *contract.CreateInput)
	// Turn is a turn streamed in an environment of the endpoint's
	// Profile (Profile and Create unused).
	Turn *contract.TurnInput
	// Check inspects the refusal (an error type the provider adds).
	Check func(t *testing.T, err error)
}

// CommonRefusals are the refusals every cli-base chat provider makes:
// what a direct model call cannot honour.
func CommonRefusals(t *testing.T) []Refusal {
	x := "x"
	return []Refusal{
		{Name: "mcp", Profile: `{"harness":"cli-base","mcp":{"docs":{"url":"https://mcp.example.com"}}}`},
		{Name: "tools map", Profile: `{"harness":"cli-base","tools":{"bash":true}}`},
		{Name: "permissions", Profile: `{"harness":"cli-base","permissions":{"bash":"deny"}}`},
		{Name: "instructions", Profile: `{"harness":"cli-base","prompt":{"instructions":["Use tabs."]}}`},
		{Name: "workspace", Create: func(in *contract.CreateInput) { in.Workspace = &contract.WorkspaceRequest{} }},
		{Name: "turn id", Turn: &contract.TurnInput{Prompt: &x, TurnID: &x}},
		{Name: "session", Turn: &contract.TurnInput{Prompt: &x, SessionID: &x}},
		{Name: "image part", Turn: &contract.TurnInput{Parts: []contract.InputPart{{Type: "file", URL: ptr("https://example.com/a.png")}}}},
		{Name: "no prompt", Turn: &contract.TurnInput{}},
		{Name: "turn profile with mcp", Turn: &contract.TurnInput{Prompt: &x, Profile: MustProfile(t, `{"mcp":{"docs":{"url":"https://mcp.example.com"}}}`)}},
	}
}

func ptr(s string) *string { return &s }

// RefusedBeforeDispatch checks that each refusal is contract.ErrUnsupported
// and that the endpoint received no request.
func RefusedBeforeDispatch(t *testing.T, e Endpoint, refusals []Refusal) {
	for _, r := range refusals {
		kind := "create/"
		if r.Turn != nil {
			kind = "turn/"
		}
		t.Run(kind+r.Name, func(t *testing.T) {
			p, requests := e.Provider(t, e.Transcripts.Text, true)
			src := r.Profile
			if src == "" {
				src = e.Profile
			}
			in := &contract.CreateInput{Profile: profile.Ref{Inline: MustProfile(t, src)}}
			if r.Create != nil {
				r.Create(in)
			}
			var err error
			if r.Turn == nil {
				_, err = p.Create(t.Context(), in)
			} else {
				env, cerr := p.Create(t.Context(), in)
				if cerr != nil {
					t.Fatal(cerr)
				}
				_, err = providertest.Collect(env.Stream(t.Context(), r.Turn))
			}
			if !errors.Is(err, contract.ErrUnsupported) {
				t.Errorf("err %v, want contract.ErrUnsupported", err)
			}
			if r.Check != nil {
				r.Check(t, err)
			}
			if n := requests(); n != 0 {
				t.Errorf("%d requests reached the endpoint", n)
			}
		})
	}
}
