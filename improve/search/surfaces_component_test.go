package search_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/improve/search"
	"github.com/agentrt/agentrt/profile"
)

// The component fixture: metadata.style of the profile, as text. Apply
// changes the profile it is given in place (it gets a copy: the base must
// not change).

func readStyle(p *profile.Profile) ([]byte, error) {
	v, ok := p.Metadata["style"]
	if !ok || v.Kind() != canonjson.String {
		return nil, errors.New("the profile has no metadata.style text")
	}
	return []byte(v.Str()), nil
}

func applyStyle(p *profile.Profile, b []byte) (*profile.Profile, error) {
	if p.Metadata == nil {
		p.Metadata = map[string]canonjson.Value{}
	}
	p.Metadata["style"] = canonjson.StringValue(string(b))
	return p, nil
}

func styledBase() *profile.Profile {
	p := baseProfile()
	p.Metadata = map[string]canonjson.Value{"style": canonjson.StringValue("plain"), "owner": canonjson.StringValue("team-a")}
	return p
}

var errApply = errors.New("the component does not parse")

// TestProfileComponents (runtime §3.9 profileComponents{read, apply,
// encoding}): the method sees the encoded component; a candidate is
// Apply's complete profile, checked by re-reading it and by applying the
// base's component back; any failure of Read or Apply, and an Apply that
// changes more than the component or puts it elsewhere, refuses the
// candidate before it runs (fails closed); the base never changes.
func TestProfileComponents(t *testing.T) {
	cases := []struct {
		name string
		read func(*profile.Profile) ([]byte, error)
		// apply gets the fixture's applyStyle to wrap.
		apply    func(*profile.Profile, []byte) (*profile.Profile, error)
		ship     bool
		wantErr  error  // errors.Is target, when the run fails
		wantPath string // the *ComponentError's path, when the run fails
	}{
		{name: "read and apply", read: readStyle, apply: applyStyle, ship: true},
		{name: "apply changes more than the component", read: readStyle, wantPath: "/profileComponents/apply",
			apply: func(p *profile.Profile, b []byte) (*profile.Profile, error) {
				p.Description = profile.Ptr("changed on the side")
				return applyStyle(p, b)
			}},
		{name: "apply puts the component elsewhere", read: readStyle, wantPath: "/profileComponents/apply",
			apply: func(p *profile.Profile, b []byte) (*profile.Profile, error) {
				p.Metadata["elsewhere"] = canonjson.StringValue(string(b))
				return p, nil
			}},
		{name: "apply fails", read: readStyle, wantPath: "/profileComponents/apply", wantErr: errApply,
			apply: func(*profile.Profile, []byte) (*profile.Profile, error) { return nil, errApply }},
		{name: "apply returns nothing", read: readStyle, wantPath: "/profileComponents/apply",
			apply: func(*profile.Profile, []byte) (*profile.Profile, error) { return nil, nil }},
		{name: "apply returns an invalid profile", read: readStyle, wantPath: "/profileComponents/apply",
			apply: func(p *profile.Profile, b []byte) (*profile.Profile, error) {
				p.Hooks = map[string][]profile.HookCommand{"": nil}
				return applyStyle(p, b)
			}},
		{name: "read fails on the base", wantPath: "/profileComponents/read",
			read: func(*profile.Profile) ([]byte, error) { return nil, errApply }, apply: applyStyle, wantErr: errApply},
		{name: "read is not text", wantPath: "/profileComponents/read",
			read: func(*profile.Profile) ([]byte, error) { return []byte{0xff, 0xfe}, nil }, apply: applyStyle},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			base := styledBase()
			before, err := profile.Digest(base)
			if err != nil {
				t.Fatal(err)
			}
			runs := 0
			spy := &currentSpy{inner: listOptimizer{proposals: []canonjson.Value{
				canonjson.StringValue("polite"), canonjson.StringValue(shout), canonjson.NumberValue(1),
			}}}
			o, _ := options(t, ptr(0.001))
			o.Surface, o.Method, o.Agent = search.SurfaceComponent, spy, shoutAgent(&runs)
			o.ProfileComponents = &search.ProfileComponents{Name: "style", Read: c.read, Apply: c.apply}
			res, err := search.Improve(context.Background(), base, o)
			if after, _ := profile.Digest(base); after != before {
				t.Errorf("the base changed: %s, then %s", before, after)
			}
			if !c.ship {
				var ce *search.ComponentError
				if !errors.As(err, &ce) || ce.Path != c.wantPath || ce.Name != "style" || (c.wantErr != nil && !errors.Is(err, c.wantErr)) {
					t.Fatalf("err %v, want a *ComponentError at %s", err, c.wantPath)
				}
				if runs != 0 {
					t.Errorf("a refused component ran %d times", runs)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if spy.current.Str() != "plain" || spy.encoding != "text" {
				t.Errorf("the method saw %s, want the encoded component \"plain\"", canonjson.Marshal(spy.current))
			}
			if res.Decision != search.Ship || res.Candidate.Profile.Metadata["style"].Str() != shout || res.Candidate.Profile.Metadata["owner"].Str() != "team-a" {
				t.Fatalf("decision %s candidate %+v", res.Decision, res.Candidate.Profile)
			}
			last := res.Population[len(res.Population)-1]
			if last.Status != "refused" || !strings.Contains(last.Reason, "/profileComponents/apply") || len(res.Population) != 4 {
				t.Errorf("population %+v: the number proposal must be refused by apply's rule", res.Population)
			}
		})
	}
}

// TestComponentEncodingInRecipe: the component's name and encoding are
// part of the recipe identity.
func TestComponentEncodingInRecipe(t *testing.T) {
	digest := func(name, encoding string) string {
		o, _ := options(t, ptr(0.001))
		o.Surface = search.SurfaceComponent
		o.ProfileComponents = &search.ProfileComponents{Name: name, Read: readStyle, Apply: applyStyle, Encoding: encoding}
		d, err := search.RecipeDigest(styledBase(), o)
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	text := digest("style", "")
	if text != digest("style", "text") || text == digest("style", "json") || text == digest("tone", "text") {
		t.Error("the recipe does not follow the component's name and encoding")
	}
}
