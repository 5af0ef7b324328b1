package kernel_test

import (
	"context"
	"testing"

	"github.com/agentrt/agentrt/kernel"
	"github.com/agentrt/agentrt/profile"
	"github.com/agentrt/agentrt/providers/scripted"
)

// BenchmarkProjectStage measures the one stage check every run makes
// before any spend: the projection of a seat stage and its check
// against the provider's capabilities.
func BenchmarkProjectStage(b *testing.B) {
	prof, err := profile.Parse([]byte(seatToolsLater))
	if err != nil {
		b.Fatal(err)
	}
	caps, err := scripted.New(nil, scripted.Options{}).Capabilities(context.Background())
	if err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		if _, err := kernel.ProjectStage(caps, prof, 1); err != nil {
			b.Fatal(err)
		}
	}
}
