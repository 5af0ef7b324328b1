package search

import (
	"errors"
	"fmt"
	"unicode/utf8"

	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/profile"
)

// MaxComponentBytes bounds an encoded profile component, the base's and
// every candidate's.
const MaxComponentBytes = 1 << 20

// ProfileComponents searches a named component of the profile that the
// caller reads and applies itself (runtime §3.9 profileComponents?{read,
// apply, encoding?}): a part of the profile only the caller knows how to
// cut out, such as one mode's prompt or a setting inside an extension.
// The method sees the encoded component as a JSON string and proposes
// another encoding; Improve materializes a candidate as Apply's profile,
// after checking that it is complete and valid, that Read finds exactly
// the proposed component in it, and that applying the base's component to
// it gives the base back (it differs from the base only where Apply put
// the component). Read and Apply get a copy of the profile; any error of
// theirs refuses the candidate (*ComponentError): it fails closed.
type ProfileComponents struct {
	// Name names the component, for people and the recipe identity.
	Name string
	// Read returns p's encoded component.
	Read func(p *profile.Profile) ([]byte, error)
	// Apply returns a complete profile: p with its component replaced by
	// the one encoded in component.
	Apply func(p *profile.Profile, component []byte) (*profile.Profile, error)
	// Encoding names the encoding Read and Apply speak ("text" when
	// empty, or "json", "yaml", …); the method is told it, and it is part
	// of the recipe identity.
	Encoding string
}

func (c *ProfileComponents) encoding() string {
	if c.Encoding == "" {
		return "text"
	}
	return c.Encoding
}

// ComponentError refuses a profile component that could not be read or
// applied, or whose application changed more than the component. Path is
// the JSON pointer of the option whose rule failed
// ("/profileComponents/read", "/profileComponents/apply").
type ComponentError struct {
	Name   string
	Path   string
	Reason string
	// Err is Read's or Apply's own error, when it was one.
	Err error
}

func (e *ComponentError) Error() string {
	msg := fmt.Sprintf("search: profile component %q: %s: %s", e.Name, e.Path, e.Reason)
	if e.Err != nil {
		msg += ": " + e.Err.Error()
	}
	return msg
}

// Unwrap returns Read's or Apply's error.
func (e *ComponentError) Unwrap() error { return e.Err }

func checkComponents(c *ProfileComponents) error {
	switch {
	case c == nil:
		return &OptionsError{Path: "/profileComponents", Reason: "surface profile-component needs ProfileComponents{Name, Read, Apply}"}
	case c.Name == "":
		return &OptionsError{Path: "/profileComponents/name", Reason: "name the component"}
	case c.Read == nil:
		return &OptionsError{Path: "/profileComponents/read", Reason: "a read function is required"}
	case c.Apply == nil:
		return &OptionsError{Path: "/profileComponents/apply", Reason: "an apply function is required"}
	}
	return nil
}

// readComponent reads p's encoded component (from a copy of p) as the
// JSON string the method sees.
func (r *run) readComponent(p *profile.Profile) (canonjson.Value, error) {
	c := r.o.ProfileComponents
	fail := func(reason string, err error) (canonjson.Value, error) {
		return canonjson.Value{}, &ComponentError{Name: c.Name, Path: "/profileComponents/read", Reason: reason, Err: err}
	}
	own, err := profile.Clone(p)
	if err != nil {
		return fail("the profile cannot be copied", err)
	}
	b, err := c.Read(own)
	switch {
	case err != nil:
		return fail("read failed", err)
	case len(b) > MaxComponentBytes:
		return fail(fmt.Sprintf("the component is %d bytes, more than %d", len(b), MaxComponentBytes), nil)
	case !utf8.Valid(b):
		return fail("the component is not UTF-8 text; encode it (Encoding) so the method can read it", nil)
	}
	return canonjson.StringValue(string(b)), nil
}

// applyComponent materializes the candidate whose encoded component is
// v: Apply's profile, validated, re-read and reverted to check it.
func (r *run) applyComponent(v canonjson.Value) (*profile.Profile, error) {
	c := r.o.ProfileComponents
	fail := func(reason string, err error) (*profile.Profile, error) {
		return nil, &ComponentError{Name: c.Name, Path: "/profileComponents/apply", Reason: reason, Err: err}
	}
	if v.Kind() != canonjson.String {
		return fail("a candidate component is a JSON string, not "+kindName(v), nil)
	}
	if len(v.Str()) > MaxComponentBytes {
		return fail(fmt.Sprintf("the candidate component is %d bytes, more than %d", len(v.Str()), MaxComponentBytes), nil)
	}
	p, err := r.applyTo(r.base, []byte(v.Str()))
	if err != nil {
		return fail("apply failed", err)
	}
	back, err := r.readComponent(p)
	if err != nil {
		return nil, err
	}
	if back.Str() != v.Str() {
		return fail("reading the applied profile does not give the component back: apply put it elsewhere or changed it", nil)
	}
	baseComponent, err := r.readComponent(r.base)
	if err != nil {
		return nil, err
	}
	reverted, err := r.applyTo(p, []byte(baseComponent.Str()))
	if err != nil {
		return fail("applying the base's component to the candidate failed", err)
	}
	if d, err := profile.Digest(reverted); err != nil || d != r.baseDigest {
		return fail("the candidate differs from the base outside the component: applying the base's component back does not give the base", err)
	}
	return p, nil
}

// applyTo runs Apply on a copy of p and returns a validated copy of its
// answer.
func (r *run) applyTo(p *profile.Profile, component []byte) (*profile.Profile, error) {
	own, err := profile.Clone(p)
	if err != nil {
		return nil, err
	}
	out, err := r.o.ProfileComponents.Apply(own, component)
	if err != nil {
		return nil, err
	}
	if out == nil {
		return nil, errors.New("apply returned no profile")
	}
	v, err := out.Value()
	if err != nil {
		return nil, &CandidateError{Err: err}
	}
	valid, err := profile.FromValue(v)
	if err != nil {
		return nil, &CandidateError{Err: err}
	}
	return valid, nil
}
