//go:build unix

package supervise

import (
	"context"
	"fmt"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/contract"
)

// The coordination verbs' argument decoding costs linear time in the
// arguments: each worst case at two sizes, ten times apart. Compare
// cpu-ns/op (the process's CPU time per call; ns/op is wall time, which
// a loaded machine inflates): linear growth is a ratio near ten. The
// arguments' size is bounded before they reach a verb, by whoever
// carries the call (the MCP server's request body, the model's reply),
// and their depth by canonjson's decoding (at most 1000 levels).
func BenchmarkVerbArgumentsWorstCases(b *testing.B) {
	byName := map[string]contract.Tool{}
	for _, tl := range argumentDecoders(b) {
		byName[strings.TrimPrefix(tl.Name, ToolPrefix)] = tl
	}
	ask := `{"level":"worker","question":"q","reason":"r","urgency":"blocks-step","options":[`
	cases := []struct {
		name, verb string
		sizes      [2]int
		args       func(n int) string
	}{
		{"ask options as objects", VerbAskParent, [2]int{1e4, 1e5}, func(n int) string {
			return ask + strings.TrimSuffix(strings.Repeat(`{"label":"a","tradeoff":"t"},`, n), ",") + `]}`
		}},
		{"ask options as labels", VerbAskParent, [2]int{1e4, 1e5}, func(n int) string {
			return ask + strings.TrimSuffix(strings.Repeat(`"a",`, n), ",") + `]}`
		}},
		{"ask huge question", VerbAskParent, [2]int{1e6, 1e7}, func(n int) string {
			return `{"level":"worker","question":"` + strings.Repeat("q", n) + `","reason":"r","urgency":"blocks-step"}`
		}},
		{"await many kinds", VerbAwaitEvent, [2]int{1e4, 1e5}, func(n int) string {
			return `{"kinds":[` + strings.TrimSuffix(strings.Repeat(`"settled",`, n), ",") + `]}`
		}},
		{"journal many kinds", VerbReadJournal, [2]int{1e4, 1e5}, func(n int) string {
			return `{"kinds":[` + strings.TrimSuffix(strings.Repeat(`"spawned",`, n), ",") + `]}`
		}},
		{"steer deep nesting", VerbSteerAgent, [2]int{90, 900}, func(n int) string {
			return `{"workerId":"w","instruction":"i","x":` + strings.Repeat("[", n) + strings.Repeat("]", n) + `}`
		}},
		{"spawn authored profile, many tools", VerbSpawnWorker, [2]int{1e3, 1e4}, func(n int) string {
			var sb strings.Builder
			for i := range n {
				if i > 0 {
					sb.WriteByte(',')
				}
				fmt.Fprintf(&sb, `"t%d":true`, i)
			}
			return `{"task":"x","profile":{"name":"c","tools":{` + sb.String() + `}}}`
		}},
	}
	for _, tc := range cases {
		tl := byName[tc.verb]
		for _, n := range tc.sizes {
			args, err := canonjson.DecodeWith([]byte(tc.args(n)), canonjson.DecodeOptions{MaxValues: -1})
			if err != nil {
				b.Fatalf("%s: %v", tc.name, err)
			}
			b.Run(fmt.Sprintf("%s/n=%d", tc.name, n), func(b *testing.B) {
				cpu := cpuTime()
				for b.Loop() {
					_, _ = tl.Run(context.Background(), args)
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
