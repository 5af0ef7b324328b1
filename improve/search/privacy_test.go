package search_test

import (
	"context"
	"errors"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/agentrt/agentrt/candidate"
	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/contract"
	"github.com/agentrt/agentrt/improve/search"
	"github.com/agentrt/agentrt/profile"
	"github.com/agentrt/agentrt/providers/scripted"
)

// Credential-shaped fixtures, assembled so that no scanner flags this
// file; every one is recognised by candidate.ScanSecrets.
var (
	fakeAnthropicKey = "sk-" + "ant-" + "api03-AbCdEfGhIjKlMnOpQrStUv"
	fakeGitHubToken  = "gh" + "p_" + "0123456789abcdefABCDEF"
	fakeAWSKey       = "AK" + "IA" + "ABCDEFGHIJKLMNOP"
	fakeBearer       = "Bear" + "er eyJhbGciOiJIUzI1NiJ9"
	fakePEM          = "-----BEGIN " + "RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA\n-----END RSA PRIVATE KEY-----"
	fakeURL          = "https://admin:" + "hunter2@db.example.com/prod"
)

var anyEmail = regexp.MustCompile(`[A-Za-z0-9._%+\-]+@[A-Za-z0-9\-]+(?:\.[A-Za-z0-9\-]+)*\.[A-Za-z]{2,}`)

// clean reports whether s carries neither a recognised credential nor an
// email address.
func clean(s string) bool {
	return len(candidate.ScanSecrets(canonjson.StringValue(s))) == 0 && !anyEmail.MatchString(s)
}

// TestScrub (§3.9 privacy): the built-in scrubber removes what the
// credential recognizer flags, in a word, across two words, or across a
// block, and email addresses, and leaves other text as it was.
func TestScrub(t *testing.T) {
	tests := []struct {
		name, in, want string
	}{
		{"plain text untouched", "The user asked for a refund on order 1234.", "The user asked for a refund on order 1234."},
		{"whitespace kept", "  a\tb\n\nc  ", "  a\tb\n\nc  "},
		{"empty", "", ""},
		{"anthropic key", "key " + fakeAnthropicKey + " was used", "key [redacted-credential] was used"},
		{"github token in punctuation", "(token=" + fakeGitHubToken + ")", "[redacted-credential]"},
		{"aws key", "id " + fakeAWSKey, "id [redacted-credential]"},
		{"bearer across two words", "Authorization: " + fakeBearer + " sent", "Authorization: [redacted-credential] [redacted-credential] sent"},
		{"url with a password", "dsn " + fakeURL, "dsn [redacted-credential]"},
		{"email", "mail alice.smith+x@mail.example.co.uk today", "mail [redacted-email] today"},
		{"email and key", "alice@example.com uses " + fakeAnthropicKey, "[redacted-email] uses [redacted-credential]"},
		{"pem block across lines", "cert:\n" + fakePEM, "[redacted: the descriptor carried credential material]"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := search.Scrub(tt.in)
			if got != tt.want {
				t.Errorf("Scrub(%q)\n got %q\nwant %q", tt.in, got, tt.want)
			}
			if !clean(got) {
				t.Errorf("Scrub left material behind: %q", got)
			}
		})
	}
}

// FuzzScrub: whatever the text, Scrub never panics and leaves neither a
// recognised credential nor an email address.
func FuzzScrub(f *testing.F) {
	for _, s := range []string{"", "hello", fakeAnthropicKey, fakeBearer, fakePEM, fakeURL, "a@b.cd", "Bearer  x y",
		"x@y.com@z.org", "sk-" + strings.Repeat("a", 30) + "@e.com", "\xff\xfe", "Bearer\u00a0token"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if got := search.Scrub(s); !clean(got) {
			t.Fatalf("Scrub(%q) = %q still carries material", s, got)
		}
	})
}

func BenchmarkScrub(b *testing.B) {
	text := strings.Repeat("The agent answered the refund question for order 1234 politely. ", 60) +
		"contact alice@example.com key " + fakeAnthropicKey
	b.SetBytes(int64(len(text)))
	b.ReportAllocs()
	for b.Loop() {
		search.Scrub(text)
	}
}

// describeSpy records what a method was given: views, and the
// descriptions of the outputs it measured.
type describeSpy struct {
	inner   search.Method
	views   []search.CaseView
	outputs []string
	calls   int
}

func (s *describeSpy) Identity() search.MethodIdentity { return s.inner.Identity() }

func (s *describeSpy) Search(ctx context.Context, in search.MethodInput) (search.MethodOutput, error) {
	s.calls++
	s.views = append(append(s.views, in.Train...), in.Selection...)
	evaluate := in.Evaluate
	in.Evaluate = func(ctx context.Context, v canonjson.Value, ids []string) (search.Evaluation, error) {
		ev, err := evaluate(ctx, v, ids)
		for _, c := range ev.Cases {
			s.outputs = append(s.outputs, c.Description)
		}
		return ev, err
	}
	return s.inner.Search(ctx, in)
}

// partitionAgent records the partition of every case it ran.
type partitionAgent struct {
	inner search.Agent
	mu    sync.Mutex
	ran   map[search.Partition]int
}

func (a *partitionAgent) Run(ctx context.Context, p *profile.Profile, sc search.Scenario) (search.Output, error) {
	a.mu.Lock()
	if a.ran == nil {
		a.ran = map[search.Partition]int{}
	}
	a.ran[sc.Partition]++
	a.mu.Unlock()
	return a.inner.Run(ctx, p, sc)
}

// TestDescriptorsReachMethodScrubbed (§3.9 privacy, RTP-12): a case and
// an output descriptor carrying an API key and an email address reach the
// method redacted by the caller's hook first and then scrubbed; test
// cases are never described, and their outputs never either.
func TestDescriptorsReachMethodScrubbed(t *testing.T) {
	o, _ := options(t, ptr(0.001))
	spy := &describeSpy{inner: o.Method}
	o.Method = spy
	var mu sync.Mutex
	var described []search.Partition
	var redactOrder []string
	o.DescribeScenario = func(_ context.Context, sc search.Scenario) (string, error) {
		mu.Lock()
		described = append(described, sc.Partition)
		mu.Unlock()
		return "case " + sc.ID + " from project Nightjar, owner alice@example.com, key " + fakeAnthropicKey, nil
	}
	o.DescribeArtifact = func(_ context.Context, a search.Artifact) (string, error) {
		mu.Lock()
		described = append(described, a.Case.Partition)
		mu.Unlock()
		return "output " + a.Output.Text + " via " + fakeBearer + " cc bob@corp.example", nil
	}
	o.Redact = func(_ context.Context, d string) (string, error) {
		mu.Lock()
		redactOrder = append(redactOrder, d)
		mu.Unlock()
		// The caller's own rule: a code name the scrubber cannot know.
		return strings.ReplaceAll(d, "Nightjar", "[project]"), nil
	}
	if _, err := search.Improve(context.Background(), baseProfile(), o); err != nil {
		t.Fatal(err)
	}
	if len(spy.views) != 4 || len(spy.outputs) == 0 {
		t.Fatalf("views %d outputs %d", len(spy.views), len(spy.outputs))
	}
	for _, p := range described {
		if p == search.Test {
			t.Fatal("a test case, or its output, was described")
		}
	}
	// The redact hook saw the raw descriptor: it runs before the scrubber.
	if len(redactOrder) == 0 || !strings.Contains(redactOrder[0], "alice@example.com") {
		t.Errorf("Redact did not run first on the raw descriptor: %q", redactOrder)
	}
	for _, v := range spy.views {
		want := "case " + v.ID + " from project [project], owner [redacted-email], key [redacted-credential]"
		if v.Description != want || v.Partition == search.Test {
			t.Errorf("view %s described %q, want %q", v.ID, v.Description, want)
		}
	}
	for _, d := range spy.outputs {
		if !clean(d) || !strings.Contains(d, "[redacted-email]") || !strings.Contains(d, "[redacted-credential]") || !strings.HasPrefix(d, "output HELLO") && !strings.HasPrefix(d, "output hello") {
			t.Errorf("output described as %q", d)
		}
	}
}

// TestDescriptorsOffByDefault (§3.9 privacy): without hooks the method
// sees ids only: no case body and no description of a case or output.
func TestDescriptorsOffByDefault(t *testing.T) {
	o, _ := options(t, ptr(0.001))
	spy := &describeSpy{inner: o.Method}
	o.Method = spy
	if _, err := search.Improve(context.Background(), baseProfile(), o); err != nil {
		t.Fatal(err)
	}
	for _, v := range spy.views {
		if v.Input != "" || v.Expected != "" || v.Description != "" || v.Partition == search.Test {
			t.Errorf("the method was shown %+v", v)
		}
	}
	for _, d := range spy.outputs {
		if d != "" {
			t.Errorf("an output was described: %q", d)
		}
	}
}

// TestDescriptorHookFailsClosed (§3.9 privacy): a describe or redact hook
// that fails, panics or answers too much fails the run with a
// *DescriptorError naming the hook and the case; the method is shown
// nothing of it, no test case runs, and the error carries no secret the
// hook echoed.
func TestDescriptorHookFailsClosed(t *testing.T) {
	leak := errors.New("could not redact " + fakeAnthropicKey)
	tests := []struct {
		name     string
		set      func(o *search.Options)
		hook     string
		path     string
		searched bool // the method ran before the failure
	}{
		{"describeScenario error", func(o *search.Options) {
			o.DescribeScenario = func(context.Context, search.Scenario) (string, error) { return "", leak }
		}, search.HookDescribeScenario, "/scenarios/0", false},
		{"describeScenario panic", func(o *search.Options) {
			o.DescribeScenario = func(context.Context, search.Scenario) (string, error) { panic(fakeAnthropicKey) }
		}, search.HookDescribeScenario, "/scenarios/0", false},
		{"describeScenario too long", func(o *search.Options) {
			o.DescribeScenario = func(context.Context, search.Scenario) (string, error) {
				return strings.Repeat("x", search.MaxDescriptorBytes+1), nil
			}
		}, search.HookDescribeScenario, "/scenarios/0", false},
		{"redact error", func(o *search.Options) {
			o.DescribeScenario = func(_ context.Context, sc search.Scenario) (string, error) { return "case " + sc.ID, nil }
			o.Redact = func(context.Context, string) (string, error) { return "", leak }
		}, search.HookRedact, "/scenarios/0", false},
		{"redact panic", func(o *search.Options) {
			o.DescribeScenario = func(_ context.Context, sc search.Scenario) (string, error) { return "case " + sc.ID, nil }
			o.Redact = func(context.Context, string) (string, error) { panic("boom") }
		}, search.HookRedact, "/scenarios/0", false},
		{"describeArtifact error", func(o *search.Options) {
			o.DescribeArtifact = func(context.Context, search.Artifact) (string, error) { return "", leak }
		}, search.HookDescribeArtifact, "/artifacts/", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o, _ := options(t, ptr(0.001))
			agent := &partitionAgent{inner: o.Agent}
			o.Agent = agent
			spy := &describeSpy{inner: o.Method}
			o.Method = spy
			tt.set(&o)
			res, err := search.Improve(context.Background(), baseProfile(), o)
			var de *search.DescriptorError
			if !errors.As(err, &de) || de.Hook != tt.hook || !strings.HasPrefix(de.Path, tt.path) {
				t.Fatalf("got %v, want a *DescriptorError of %s at %s", err, tt.hook, tt.path)
			}
			if strings.Contains(err.Error(), fakeAnthropicKey) {
				t.Errorf("the error carries the secret: %v", err)
			}
			if (spy.calls > 0) != tt.searched {
				t.Errorf("method ran %d times", spy.calls)
			}
			for _, d := range spy.outputs {
				if d != "" {
					t.Errorf("the method was shown %q", d)
				}
			}
			if agent.ran[search.Test] != 0 || len(res.Test) != 0 || res.Decision != search.Hold {
				t.Errorf("a failed description still measured the test partition: %+v", res)
			}
		})
	}
}

// recordingProposer plays the greedy proposer, alternating the polite and
// winning prompts, and records every user message it was sent.
type recordingProposer struct {
	mu   sync.Mutex
	sent []string
}

func (p *recordingProposer) model() *scripted.ReplyModel {
	return scripted.NewReplyModel(func(messages []contract.ChatMessage, _ []contract.Tool) []contract.ChatEvent {
		p.mu.Lock()
		defer p.mu.Unlock()
		for _, m := range messages {
			if m.Role == contract.ChatUser && m.Content != nil {
				p.sent = append(p.sent, *m.Content)
			}
		}
		text := politePrompt
		if len(p.sent)%2 == 0 {
			text = winningPrompt
		}
		return []contract.ChatEvent{scripted.Text(text), scripted.UsageCost(50, 20, 0.002)}
	})
}

// TestGreedyProposerGetsScrubbedDescriptors (§3.9 privacy, end to end):
// what the built-in method forwards to its proposer model carries the
// scrubbed case and output descriptors and the training examples, and
// never the credential, the email address or a test case.
func TestGreedyProposerGetsScrubbedDescriptors(t *testing.T) {
	rec := &recordingProposer{}
	o, _ := trainingOptions(t, dataset("d.json", cleanExamples()...))
	o.Method = search.Greedy{Model: rec.model()}
	o.DescribeScenario = func(_ context.Context, sc search.Scenario) (string, error) {
		return "ticket " + sc.ID + " from alice@example.com signed " + fakeGitHubToken, nil
	}
	o.DescribeArtifact = func(_ context.Context, a search.Artifact) (string, error) {
		return "answered " + a.Output.Text + " with " + fakeAWSKey, nil
	}
	if _, err := search.Improve(context.Background(), baseProfile(), o); err != nil {
		t.Fatal(err)
	}
	if len(rec.sent) == 0 {
		t.Fatal("the proposer was never asked")
	}
	for _, msg := range rec.sent {
		if !clean(msg) || strings.Contains(msg, fakeGitHubToken) || strings.Contains(msg, "alice@") {
			t.Errorf("the proposer was sent material:\n%s", msg)
		}
		for _, id := range []string{"x1", "x2", "x3", "x4", "x5", "x6"} {
			if strings.Contains(msg, id) {
				t.Errorf("the proposer was sent test case %s:\n%s", id, msg)
			}
		}
		for _, want := range []string{"[case: ticket ", "[redacted-email]", "[output: answered ", "[redacted-credential]", `"good morning" → "GOOD MORNING"`} {
			if !strings.Contains(msg, want) {
				t.Errorf("the proposer message lacks %q:\n%s", want, msg)
			}
		}
	}
}

// TestSharedCaseBodiesAreScrubbed (§3.9 privacy): ShareCaseBodies shows
// the method train and selection inputs and answers only after Redact
// and Scrub, like any descriptor; test cases stay hidden.
func TestSharedCaseBodiesAreScrubbed(t *testing.T) {
	o, _ := options(t, ptr(0.001))
	o.Scenarios[0].Input = "refund for bob@example.com, our key is " + fakeAnthropicKey + " (Nightjar)"
	o.Scenarios[0].Expected = strings.ToUpper(o.Scenarios[0].Input)
	o.ShareCaseBodies = true
	o.Redact = func(_ context.Context, d string) (string, error) {
		return strings.ReplaceAll(strings.ReplaceAll(d, "Nightjar", "[project]"), "NIGHTJAR", "[project]"), nil
	}
	spy := &describeSpy{inner: o.Method}
	o.Method = spy
	if _, err := search.Improve(context.Background(), baseProfile(), o); err != nil {
		t.Fatal(err)
	}
	if len(spy.views) != 4 {
		t.Fatalf("views %+v", spy.views)
	}
	for _, v := range spy.views {
		if v.Partition == search.Test || v.Input == "" || !clean(v.Input) || !clean(v.Expected) {
			t.Errorf("shared view %+v", v)
		}
	}
	if got, want := spy.views[0].Input, "refund for [redacted-email], our key is [redacted-credential] ([project])"; got != want {
		t.Errorf("shared input %q, want %q", got, want)
	}
}
