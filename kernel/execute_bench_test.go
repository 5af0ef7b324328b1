package kernel_test

import (
	"context"
	"testing"

	"github.com/agentrt/agentrt/kernel"
	"github.com/agentrt/agentrt/profile"
	"github.com/agentrt/agentrt/providers/scripted"
	"github.com/agentrt/agentrt/store/memory"
)

// BenchmarkExecute is the kernel's cost per exact run around a
// zero-latency provider: capability check, seat projection, digests, run
// record, three durable events, usage, ledger entry and the end record,
// in the in-memory store.
func BenchmarkExecute(b *testing.B) {
	p, err := profile.Parse([]byte(noteWriter))
	if err != nil {
		b.Fatal(err)
	}
	sc, err := scripted.ParseScript([]byte(`{"turns":[{"repeat":true,"steps":[{"text":"A note."},{"usage":{"inputTokens":12,"outputTokens":5},"mode":"delta"}]}]}`))
	if err != nil {
		b.Fatal(err)
	}
	prov := scripted.New(sc, scripted.Options{})
	st := memory.New(nil)
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		res, err := kernel.Execute(ctx, kernel.Request{Profile: p, Task: "t", Provider: prov, Store: st, Check: nonEmpty})
		if err != nil || !res.Delivered {
			b.Fatal(err)
		}
	}
}
