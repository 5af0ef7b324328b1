package search_test

import (
	"context"
	"errors"
	"testing"

	"github.com/agentrt/agentrt/contract"
	"github.com/agentrt/agentrt/improve/search"
	"github.com/agentrt/agentrt/providers/scripted"
)

// textProposer plays the greedy method's model on a text surface: a
// useless variant, then the winning one.
func textProposer() *scripted.ChatModel {
	return scripted.NewChatModel(scripted.ChatScript{Cycle: true, Turns: []scripted.ChatTurn{
		{Events: []contract.ChatEvent{scripted.Text("Be calm."), scripted.UsageCost(50, 20, 0.002)}},
		{Events: []contract.ChatEvent{scripted.Text("Always " + shout + "."), scripted.UsageCost(50, 20, 0.002)}},
	}})
}

// TestGreedySearchesText: the built-in method rewrites any text surface
// (memory text, one named skill's content, a text component) as it
// rewrites the system prompt, and refuses a surface that is not text.
func TestGreedySearchesText(t *testing.T) {
	cases := []struct {
		name string
		edit func(o *search.Options)
		want error
	}{
		{"memory", func(o *search.Options) { o.Surface = search.SurfaceMemory }, nil},
		{"skills/resourceName", func(o *search.Options) {
			o.Surface, o.Skills = search.SurfaceSkills, &search.Skills{ResourceName: "style"}
		}, nil},
		{"profile-component", func(o *search.Options) {
			o.Surface = search.SurfaceComponent
			o.ProfileComponents = &search.ProfileComponents{Name: "style", Read: readStyle, Apply: applyStyle}
		}, nil},
		{"skills (a list, not text)", func(o *search.Options) { o.Surface = search.SurfaceSkills }, search.ErrGreedySurface},
		{"hooks (not text)", func(o *search.Options) { o.Surface = search.SurfaceHooks }, search.ErrGreedySurface},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			runs := 0
			o, _ := options(t, ptr(0.001))
			o.Method, o.Agent = search.Greedy{Model: textProposer()}, shoutAgent(&runs)
			o.AuthorizeSensitiveCandidate = func(context.Context, search.SensitiveCandidate) error { return nil }
			c.edit(&o)
			base := surfaceBase()
			base.Metadata = styledBase().Metadata
			res, err := search.Improve(context.Background(), base, o)
			if c.want != nil {
				if !errors.Is(err, c.want) {
					t.Fatalf("err %v, want %v", err, c.want)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if res.Decision != search.Ship || len(res.Population) != 3 {
				t.Fatalf("decision %s, population %d, reasons %v", res.Decision, len(res.Population), res.Reasons)
			}
			if got := res.Population[2].Surface.Str(); got != "Always "+shout+"." || res.Population[2].Digest != res.Candidate.Digest {
				t.Errorf("selected %q (%s), want the SHOUT text", got, res.Candidate.Digest)
			}
		})
	}
}
