package search

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/agentrt/agentrt/candidate"
	"github.com/agentrt/agentrt/canonjson"
)

// MaxDescriptorBytes bounds one descriptor, as a describe hook returns it
// and as Redact returns it: a longer one fails the run (*DescriptorError)
// rather than reach the method cut where a secret might hide.
const MaxDescriptorBytes = 64 << 10

// Artifact is what one search measurement produced: the output of a
// candidate on a train or selection case. Options.DescribeArtifact may
// describe it to the method; by default the method sees scores only.
type Artifact struct {
	// Candidate is the candidate profile's digest.
	Candidate string
	// Case is the scenario measured (never a test case).
	Case Scenario
	// Output is what the agent produced.
	Output Output
}

// Descriptor hooks' names, as a *DescriptorError reports them.
const (
	HookDescribeScenario = "describeScenario"
	HookDescribeArtifact = "describeArtifact"
	HookRedact           = "redact"
)

// DescriptorError fails a run closed when a describe or redact hook
// fails, panics, or returns a descriptor over MaxDescriptorBytes: the
// method is never shown a descriptor that did not pass every step.
type DescriptorError struct {
	// Path is the JSON pointer of what was being described:
	// "/scenarios/<index>" or "/artifacts/<candidate digest>/<case id>".
	Path string
	// Hook is HookDescribeScenario, HookDescribeArtifact or HookRedact.
	Hook string
	// Err is the hook's error (for a panic, one that says so).
	Err error
}

// Error scrubs the hook's message: a hook that echoes the text it was
// given must not carry a credential into a log through the error.
func (e *DescriptorError) Error() string {
	return fmt.Sprintf("search: %s at %s failed, so nothing was described to the method: %s", e.Hook, e.Path, Scrub(e.Err.Error()))
}

// Unwrap returns the hook's error.
func (e *DescriptorError) Unwrap() error { return e.Err }

// What Scrub puts in place of what it removes.
const (
	redactedCredential  = "[redacted-credential]"
	redactedEmail       = "[redacted-email]"
	redactedDescription = "[redacted: the descriptor carried credential material]"
)

// emailAddress is an address's usual shape: local part, "@", a dotted
// domain ending in a label of letters.
var emailAddress = regexp.MustCompile(`[A-Za-z0-9._%+\-]+@[A-Za-z0-9\-]+(?:\.[A-Za-z0-9\-]+)*\.[A-Za-z]{2,}`)

// Scrub removes recognised credential material and email addresses from
// a descriptor. Credentials are recognised by candidate.ScanSecrets, the
// rule that refuses them in candidate surfaces: a whitespace-delimited
// word it flags is replaced, then a pair of adjacent words it flags
// together (such as "Bearer <token>"); then every email address is
// replaced; if the text as a whole is still flagged (a PEM block spanning
// words), all of it is replaced. The cost is linear in the text.
func Scrub(text string) string {
	if text == "" {
		return ""
	}
	words := splitWords(text)
	for i := range words {
		if !words[i].space && hasSecret(words[i].text) {
			words[i].text = redactedCredential
		}
	}
	// A pair: word i, the space after it, word i+2.
	for i := 0; i+2 < len(words); i++ {
		a, sp, b := &words[i], words[i+1], &words[i+2]
		if a.space || !sp.space || a.text == redactedCredential && b.text == redactedCredential {
			continue
		}
		if hasSecret(a.text + " " + b.text) {
			a.text, b.text = redactedCredential, redactedCredential
		}
	}
	var sb strings.Builder
	sb.Grow(len(text))
	for _, w := range words {
		sb.WriteString(w.text)
	}
	out := sb.String()
	if strings.IndexByte(out, '@') >= 0 {
		out = emailAddress.ReplaceAllString(out, redactedEmail)
	}
	if hasSecret(out) {
		return redactedDescription
	}
	return out
}

// hasSecret reports whether ScanSecrets flags s.
func hasSecret(s string) bool {
	return len(candidate.ScanSecrets(canonjson.StringValue(s))) > 0
}

type word struct {
	text  string
	space bool
}

// splitWords cuts text into alternating runs of space and non-space, so
// that joining them gives text back.
func splitWords(text string) []word {
	var out []word
	start, inSpace := 0, false
	for i, r := range text {
		sp := unicode.IsSpace(r)
		if i == 0 {
			inSpace = sp
			continue
		}
		if sp != inSpace {
			out = append(out, word{text: text[start:i], space: inSpace})
			start, inSpace = i, sp
		}
	}
	return append(out, word{text: text[start:], space: inSpace})
}

// hookNames lists the privacy and acceptance hooks set, for the recipe
// identity: what a method is shown, and which candidates are accepted,
// change a result.
func hookNames(o *Options) []string {
	var out []string
	for _, h := range []struct {
		name string
		set  bool
	}{{HookDescribeScenario, o.DescribeScenario != nil}, {HookDescribeArtifact, o.DescribeArtifact != nil},
		{HookRedact, o.Redact != nil}, {"validateCandidate", o.ValidateCandidate != nil}} {
		if h.set {
			out = append(out, h.name)
		}
	}
	return out
}

// descriptor runs a describe hook's answer through Redact and then Scrub;
// any failure, a panic included, is a *DescriptorError.
func (r *run) descriptor(ctx context.Context, path, hook string, describe func() (string, error)) (string, error) {
	return r.redacted(ctx, path, hook, MaxDescriptorBytes, describe)
}

// redacted is descriptor with a size limit of its own.
func (r *run) redacted(ctx context.Context, path, hook string, limit int, describe func() (string, error)) (string, error) {
	fail := func(hook string, err error) (string, error) {
		return "", &DescriptorError{Path: path, Hook: hook, Err: err}
	}
	text, err := guarded(describe)
	if err != nil {
		return fail(hook, err)
	}
	if len(text) > limit {
		return fail(hook, fmt.Errorf("the descriptor is %d bytes; at most %d", len(text), limit))
	}
	if h := r.o.Redact; h != nil {
		if text, err = guarded(func() (string, error) { return h(ctx, text) }); err != nil {
			return fail(HookRedact, err)
		}
		if len(text) > limit {
			return fail(HookRedact, fmt.Errorf("the redacted descriptor is %d bytes; at most %d", len(text), limit))
		}
	}
	if !utf8.ValidString(text) {
		return fail(hook, fmt.Errorf("the descriptor is not UTF-8"))
	}
	return Scrub(text), nil
}

// guarded calls f, turning a panic into an error. The panic's value is
// not kept: it may hold the very text the hook was meant to redact.
func guarded[T any](f func() (T, error)) (v T, err error) {
	defer func() {
		if p := recover(); p != nil {
			var zero T
			v, err = zero, fmt.Errorf("%w (%T)", errHookPanicked, p)
		}
	}()
	return f()
}

// describeViews fills the train and selection views' descriptions from
// Options.DescribeScenario and, with Options.ShareCaseBodies, their
// inputs and expected answers: each passes Redact and Scrub like any
// descriptor. Test cases are never described: they are not in the views.
func (r *run) describeViews(ctx context.Context, views ...[]CaseView) error {
	h := r.o.DescribeScenario
	if h == nil && !r.o.ShareCaseBodies {
		return nil
	}
	index := make(map[string]int, len(r.order))
	for i, sc := range r.order {
		index[sc.ID] = i
	}
	for _, vs := range views {
		for i := range vs {
			sc := r.cases[vs[i].ID]
			if sc.Partition == Test {
				continue // unreachable: views hold no test case
			}
			at := fmt.Sprintf("/scenarios/%d", index[sc.ID])
			if r.o.ShareCaseBodies {
				for _, body := range []struct {
					name string
					text *string
				}{{"input", &vs[i].Input}, {"expected", &vs[i].Expected}} {
					raw := *body.text
					if raw == "" {
						continue
					}
					d, err := r.redacted(ctx, at+"/"+body.name, HookRedact, MaxScenarioBytes, func() (string, error) { return raw, nil })
					if err != nil {
						return err
					}
					*body.text = d
				}
			}
			if h == nil {
				continue
			}
			d, err := r.descriptor(ctx, at, HookDescribeScenario, func() (string, error) { return h(ctx, sc) })
			if err != nil {
				return err
			}
			vs[i].Description = d
		}
	}
	return nil
}

// describeArtifact describes a search measurement's output through
// Options.DescribeArtifact ("" without the hook). A test case's output is
// never described.
func (r *run) describeArtifact(ctx context.Context, digest string, sc Scenario, out Output) (string, error) {
	h := r.o.DescribeArtifact
	if h == nil || sc.Partition == Test {
		return "", nil
	}
	a := Artifact{Candidate: digest, Case: sc, Output: out}
	path := "/artifacts/" + pointerToken(digest) + "/" + pointerToken(sc.ID)
	return r.descriptor(ctx, path, HookDescribeArtifact, func() (string, error) { return h(ctx, a) })
}
