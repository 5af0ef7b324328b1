package profile_test

import (
	"testing"

	"github.com/agentrt/agentrt/internal/vectors"
	"github.com/agentrt/agentrt/profile"
)

// BenchmarkProfileParseDigest strict-parses, validates and digests every
// valid, digestible AgentProfile vector once per iteration (ParseDigest);
// ns/profile is the figure to compare with the reference (about 105 µs per
// profile). BenchmarkProfileParseThenDigest is the two-call path for a
// profile the caller may have changed in between. cpu-ns/profile is the
// process's CPU time per profile, garbage collection included: on a busy
// machine, where ns/profile mostly measures waiting for a CPU, it is the
// figure to compare between revisions.
func BenchmarkProfileParseDigest(b *testing.B) {
	k, err := vectors.Load(profile.KindProfile)
	if err != nil {
		b.Fatal(err)
	}
	var inputs [][]byte
	total := 0
	for _, c := range k.Cases {
		if c.Valid && c.ProfileDigest != "" {
			raw := c.Raw()
			inputs = append(inputs, raw)
			total += len(raw)
		}
	}
	b.SetBytes(int64(total))
	b.ReportAllocs()
	b.ResetTimer()
	cpu0, cpuOK := cpuTime()
	for b.Loop() {
		for _, raw := range inputs {
			if _, _, err := profile.ParseDigest(raw); err != nil {
				b.Fatal(err)
			}
		}
	}
	n := float64(b.N * len(inputs))
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/n, "ns/profile")
	if cpu1, ok := cpuTime(); ok && cpuOK {
		b.ReportMetric(float64(cpu1-cpu0)/n, "cpu-ns/profile")
	}
}

func BenchmarkProfileParseThenDigest(b *testing.B) {
	k, err := vectors.Load(profile.KindProfile)
	if err != nil {
		b.Fatal(err)
	}
	var inputs [][]byte
	for _, c := range k.Cases {
		if c.Valid && c.ProfileDigest != "" {
			inputs = append(inputs, c.Raw())
		}
	}
	b.ReportAllocs()
	for b.Loop() {
		for _, raw := range inputs {
			p, err := profile.Parse(raw)
			if err != nil {
				b.Fatal(err)
			}
			if _, err := profile.Digest(p); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(inputs)), "ns/profile")
}
