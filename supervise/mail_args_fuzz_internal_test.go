package supervise

import (
	"errors"
	"testing"
	"unicode/utf8"

	"github.com/agentrt/agentrt/canonjson"
)

// FuzzMailArgs: whatever arguments a worker's model sends send_mail
// (§9 peer mail), decodeMailArgs never panics; it refuses with
// ErrMailArgs, or it reads a message within the bounds that keep one
// mail record far under the journal's record limit (to and replyTo at
// most MaxMailRefBytes, at most MaxMailEvidenceRefs non-empty refs of
// at most MaxMailRefBytes each, a known kind, UTF-8 subject and body),
// and reading its re-encoding gives the same message.
func FuzzMailArgs(f *testing.F) {
	for _, s := range []string{
		`{"to":"run1:s2","kind":"ask","subject":"s","body":"b"}`,
		`{"to":"run1:s2","kind":"tell","subject":"s","body":"b","evidenceRefs":["run1:s1"],"replyTo":"mail-1"}`,
		`{"to":"run1:s2","kind":"shout","subject":"s","body":"b"}`,
		`{"to":"","kind":"ask","subject":"s","body":"b"}`,
		`{"to":"run1:s2","kind":"ask","subject":"s","body":"b","evidenceRefs":[""]}`,
		`{"to":"run1:s2","kind":"ask","subject":"s","body":"b","extra":1}`,
		`{"to":7,"kind":"ask","subject":"s","body":"b"}`,
		`{"to":"run1:s2","kind":"answer","subject":"\u0000","body":"\ud800"}`,
		`{}`, `[]`, `"x"`, `null`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		args, err := canonjson.Decode(data)
		if err != nil {
			return
		}
		var a mailArgs
		if err := decodeMailArgs(args, &a); err != nil {
			if !errors.Is(err, ErrMailArgs) {
				t.Fatalf("refusal %v is not ErrMailArgs", err)
			}
			return
		}
		switch {
		case a.To == "" || a.Subject == "" || a.Body == "":
			t.Fatalf("read %+v with an empty to, subject or body", a)
		case len(a.To) > MaxMailRefBytes || len(a.ReplyTo) > MaxMailRefBytes || len(a.EvidenceRefs) > MaxMailEvidenceRefs:
			t.Fatalf("read %+v past the reference bounds", a)
		case !utf8.ValidString(a.Subject) || !utf8.ValidString(a.Body):
			t.Fatalf("read %+v with a subject or body that is not UTF-8", a)
		}
		for _, r := range a.EvidenceRefs {
			if r == "" || len(r) > MaxMailRefBytes {
				t.Fatalf("read evidence ref %q out of bounds", r)
			}
		}
		again, err := canonjson.ToValue(a)
		if err != nil {
			t.Fatal(err)
		}
		var b mailArgs
		if err := decodeMailArgs(again, &b); err != nil {
			t.Fatalf("read %+v, but its re-encoding %s is refused: %v", a, canonjson.Marshal(again), err)
		}
		if a.To != b.To || a.Kind != b.Kind || a.Subject != b.Subject || a.Body != b.Body || a.ReplyTo != b.ReplyTo || len(a.EvidenceRefs) != len(b.EvidenceRefs) {
			t.Fatalf("re-read %+v, want %+v", b, a)
		}
	})
}
