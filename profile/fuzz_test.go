package profile_test

import (
	"errors"
	"testing"

	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/internal/vectors"
	"github.com/agentrt/agentrt/profile"
	"github.com/agentrt/agentrt/schema"
)

func FuzzParse(f *testing.F) {
	for _, s := range []string{`{}`, e5, seatMaps, m1, `{"seats":[]}`, `{"mcp":{"x":{"url":"https://a"}}}`} {
		f.Add([]byte(s))
	}
	if k, err := vectors.Load(profile.KindProfile); err == nil {
		for _, c := range k.Cases {
			f.Add(c.Raw())
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		p, err := profile.Parse(data)
		if err != nil {
			var se *schema.Error
			if !errors.As(err, &se) || len(se.Issues) == 0 {
				t.Fatalf("refusal is not a *schema.Error with issues: %v", err)
			}
			return
		}
		if err := p.Validate(); err != nil {
			t.Fatalf("a parsed profile does not validate: %v", err)
		}
		d, err := profile.Digest(p)
		// ParseDigest works on the decoded value, with what the decoder
		// recorded of its strings and names; Digest on one rebuilt from
		// the Go struct, which records nothing. They must agree.
		_, pd, perr := profile.ParseDigest(data)
		if (err == nil) != (perr == nil) || pd != d {
			t.Fatalf("ParseDigest %q (%v), Digest(Parse) %q (%v)", pd, perr, d, err)
		}
		if err != nil {
			if !errors.Is(err, profile.ErrNotCanonical) {
				t.Fatalf("Digest: %v", err)
			}
			return
		}
		// The digest is the same through a canonical round trip.
		c, _ := profile.Canonical(p)
		again, err := profile.Parse(c)
		if err != nil {
			t.Fatalf("canonical form %s does not parse: %v", c, err)
		}
		if d2, err := profile.Digest(again); err != nil || d2 != d {
			t.Fatalf("digest changed through canonical form: %s vs %s (%v)", d, d2, err)
		}
		if _, err := profile.Measure(p); err != nil {
			t.Fatalf("Measure: %v", err)
		}
		for i := range p.Seats {
			proj, err := profile.Project(p, i)
			if err != nil {
				t.Fatalf("Project(%d): %v", i, err)
			}
			if _, err := canonjson.ToValue(proj); err != nil {
				t.Fatalf("projection: %v", err)
			}
		}
	})
}
