//go:build unix

package graph_test

import (
	"fmt"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agentrt/agentrt/graph"
)

// Decode's cost grows linearly with its input: each worst case at two
// sizes, ten times apart. Compare cpu-ns/op, the process's CPU time per
// decode (ns/op is wall time, which a loaded machine inflates), across
// the two sizes: linear growth is a ratio near ten.
// Decode refuses more than MaxDefinitionLen (64 MiB, the CLI's
// maxInputLen too) before it reads anything.
func BenchmarkDecodeWorstCases(b *testing.B) {
	cases := map[string]func(n int) string{
		// many resources in the budget, each its own object
		"resources": func(n int) string {
			var sb strings.Builder
			sb.WriteString(`{"nodes": [], "edges": [], "budget": {"maxTokens": 1, "maxIterations": 1, "resources": {`)
			for i := range n {
				if i > 0 {
					sb.WriteByte(',')
				}
				fmt.Fprintf(&sb, `"r%d": {"unit": "u", "limit": %d}`, i, i)
			}
			sb.WriteString(`}}}`)
			return sb.String()
		},
		// many nodes and edges, each a profile to parse
		"nodes": func(n int) string {
			var sb strings.Builder
			sb.WriteString(`{"nodes": [`)
			for i := range n {
				if i > 0 {
					sb.WriteByte(',')
				}
				fmt.Fprintf(&sb, `{"id": "n%d", "profile": {"name": "p%d", "harness": "cli-base", "model": {"default": "scripted/x"}}}`, i, i)
			}
			sb.WriteString(`], "edges": [`)
			for i := 1; i < n; i++ {
				if i > 1 {
					sb.WriteByte(',')
				}
				fmt.Fprintf(&sb, `{"kind": "delegates", "from": "n0", "to": "n%d", "directive": "delegate/coder/v1"}`, i)
			}
			sb.WriteString(`], "budget": {"maxTokens": 1, "maxIterations": 1}}`)
			return sb.String()
		},
		// one member given n times: refused at the second
		"duplicate keys": func(n int) string {
			return `{"nodes": [], "edges": [], "budget": {` + strings.Repeat(`"maxTokens": 1,`, n) + `"maxIterations": 1}}`
		},
		// an unknown member nested n deep: refused by name, not walked
		"deep nesting": func(n int) string {
			return `{"nodes": [], "edges": [], "budget": {"maxTokens": 1, "maxIterations": 1}, "x": ` +
				strings.Repeat("[", n) + strings.Repeat("]", n) + `}`
		},
		// one huge string: a directive of n bytes
		"huge string": func(n int) string {
			return `{"nodes": [{"id": "a"}, {"id": "b"}], "edges": [{"kind": "delegates", "from": "a", "to": "b", "directive": "` +
				strings.Repeat("x", n) + `"}], "budget": {"maxTokens": 1, "maxIterations": 1}}`
		},
		// one node id of n bytes
		"huge id": func(n int) string {
			return `{"nodes": [{"id": "` + strings.Repeat("i", n) + `", "profile": {"name": "b"}}], "edges": [], "budget": {"maxTokens": 1, "maxIterations": 1}}`
		},
		// one analyzes edge over n nodes
		"long over": func(n int) string {
			return `{"nodes": [], "edges": [{"kind": "analyzes", "analyst": "x", "to": "y", "directive": "analyze/v1", "over": [` +
				strings.Repeat(`"a",`, n) + `"b"]}], "budget": {"maxTokens": 1, "maxIterations": 1}}`
		},
	}
	sizes := map[string][2]int{"resources": {1e4, 1e5}, "nodes": {1e3, 1e4}, "duplicate keys": {1e4, 1e5},
		"deep nesting": {1e3, 1e4}, "huge string": {1e6, 1e7}, "huge id": {1e6, 1e7}, "long over": {1e4, 1e5}}
	for _, name := range []string{"resources", "nodes", "duplicate keys", "deep nesting", "huge string", "huge id", "long over"} {
		for _, n := range sizes[name] {
			doc := []byte(cases[name](n))
			b.Run(fmt.Sprintf("%s/n=%d", name, n), func(b *testing.B) {
				b.SetBytes(int64(len(doc)))
				cpu := cpuTime()
				for b.Loop() {
					_, _ = graph.Decode(doc)
				}
				b.ReportMetric(float64(cpuTime()-cpu)/float64(b.N), "cpu-ns/op")
			})
		}
	}
}

// cpuTime is the CPU time (user and system) this process has used.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
