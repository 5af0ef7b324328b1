package profile_test

import (
	"errors"
	"testing"

	"github.com/agentrt/agentrt/harness"
	"github.com/agentrt/agentrt/internal/vectors"
	"github.com/agentrt/agentrt/profile"
	"github.com/agentrt/agentrt/schema"
)

// acceptVia validates raw text with node, then decodes the output into a
// fresh T and converts it back, so the vectors also prove that the Go
// types keep presence (false, 0, "", {} and [] survive; absent stays
// absent).
func acceptVia[T any](kind string, node schema.Node) vectors.Accept {
	return vectors.AcceptVia[T](kind, node)
}

func TestAgentProfileVectors(t *testing.T) {
	// Checklist PKG-02, PRF-19: every reference case agrees on verdict,
	// canonical bytes, digest and issue path.
	res := vectors.CheckKind(t, profile.KindProfile, acceptVia[profile.Profile](profile.KindProfile, profile.Schema))
	t.Logf("%d cases, %d valid, %d canonical", res.Cases, res.Valid, res.Canonical)

	// The profile identity: profileDigest, or a refusal where the reference
	// refuses to digest (lone surrogates, non-finite numbers).
	k, err := vectors.Load(profile.KindProfile)
	if err != nil {
		t.Fatal(err)
	}
	digests := 0
	for _, c := range k.Cases {
		if !c.Valid {
			continue
		}
		p, err := profile.Parse(c.Raw())
		if err != nil {
			t.Errorf("%s: Parse: %v", c.Name, err)
			continue
		}
		d, err := profile.Digest(p)
		switch {
		case c.ProfileDigestError != "":
			if !errors.Is(err, profile.ErrNotCanonical) {
				t.Errorf("%s: Digest = %q, %v; the reference refuses (%s)", c.Name, d, err, c.ProfileDigestError)
			}
		case c.ProfileDigest != "":
			if err != nil || d != c.ProfileDigest {
				t.Errorf("%s: Digest = %q, %v; want %s", c.Name, d, err, c.ProfileDigest)
			}
			digests++
		}
	}
	if digests < 150 {
		t.Fatalf("only %d profile digests compared", digests)
	}
}

func TestAgentProfileDiffVectors(t *testing.T) {
	res := vectors.CheckKind(t, profile.KindDiff, acceptVia[profile.Diff](profile.KindDiff, profile.DiffSchema))
	t.Logf("%d cases, %d valid, %d canonical", res.Cases, res.Valid, res.Canonical)
}

func TestModelHintsVectors(t *testing.T) {
	vectors.CheckKind(t, profile.KindModelHints, acceptVia[profile.ModelHints](profile.KindModelHints, profile.ModelHintsSchema))
}

func TestCapabilityVectors(t *testing.T) {
	vectors.CheckKind(t, profile.KindCapability, acceptVia[profile.Capability](profile.KindCapability, profile.CapabilitySchema))
}

func TestHarnessTypeVectors(t *testing.T) {
	vectors.CheckKind(t, profile.KindHarness, acceptVia[harness.Type](profile.KindHarness, profile.HarnessSchema))
}

func TestSha256DigestVectors(t *testing.T) {
	vectors.CheckKind(t, profile.KindSha256Digest, acceptVia[string](profile.KindSha256Digest, profile.Sha256DigestSchema))
}
