package supervise

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/profile"
	"github.com/agentrt/agentrt/schema"
)

// MaxAuthoredProfile bounds an authored profile's document (its bytes
// as sent, and its canonical form as journaled).
const MaxAuthoredProfile = 64 << 10

// authoredName is the profile name journaled and shown for an authored
// profile that has no name of its own.
const authoredName = "authored"

// UnmarshalJSON decodes spawn_worker's arguments: profile is either a
// registered profile's name (Profile) or an authored AgentProfile object
// (AuthoredProfile). Unknown members are refused.
func (a *SpawnArgs) UnmarshalJSON(data []byte) error {
	type plain SpawnArgs
	var w struct {
		plain
		Profile json.RawMessage `json:"profile"`
	}
	d := json.NewDecoder(bytes.NewReader(data))
	d.DisallowUnknownFields()
	if err := d.Decode(&w); err != nil {
		return err
	}
	*a = SpawnArgs(w.plain)
	a.Profile, a.AuthoredProfile = "", nil
	raw := bytes.TrimSpace(w.Profile)
	switch {
	case len(raw) == 0 || string(raw) == "null":
	case raw[0] == '{':
		a.AuthoredProfile = bytes.Clone(raw)
	default:
		if err := json.Unmarshal(raw, &a.Profile); err != nil {
			return fmt.Errorf("profile: a profile name (string) or an authored AgentProfile (object): %w", err)
		}
	}
	return nil
}

// authored is a validated authored profile: the profile, its identity
// and the canonical document journaled with its spawn.
type authored struct {
	p      *profile.Profile
	digest string
	doc    canonjson.Value
}

// parseAuthored validates an authored profile document. A bad one is a
// *Refusal naming the JSON pointer (within the profile) of the first
// issue.
func (c *Coordinator) parseAuthored(raw []byte) (authored, error) {
	if len(raw) > MaxAuthoredProfile {
		return authored{}, c.refusal(CodeInvalidIdentity, "profile-invalid",
			fmt.Sprintf("the authored profile is %d bytes, over the %d-byte limit", len(raw), MaxAuthoredProfile))
	}
	p, digest, err := profile.ParseDigest(raw)
	if err != nil {
		return authored{}, c.refusal(CodeInvalidIdentity, "profile-invalid", profileIssue(err))
	}
	doc, err := p.Value()
	if err != nil {
		return authored{}, c.refusal(CodeInvalidIdentity, "profile-invalid", profileIssue(err))
	}
	return authored{p: p, digest: digest, doc: doc}, nil
}

// profileIssue renders a profile error as "/profile<pointer>: message"
// for its first issue, so the model can fix the member it sent.
func profileIssue(err error) string {
	var se *schema.Error
	if errors.As(err, &se) && len(se.Issues) > 0 {
		is := se.Issues[0]
		return "/profile" + is.Path + ": " + is.Message
	}
	return "/profile: " + err.Error()
}

// checkAuthored applies the gates an authored profile passes before
// the scope sees it: the AuthoredProfiles switch, then live capacity
// (max-live-workers comes first in §3.6's fence order), then schema
// validation. Code-running surfaces (local MCP servers, hooks,
// connections) are left to AuthorizeSpawn: without that hook they are
// refused.
func (c *Coordinator) checkAuthored(raw []byte) (authored, error) {
	if !c.authoredOK {
		return authored{}, c.refusal(CodeInvalidIdentity, "authored-profile",
			"this supervisor does not accept authored profiles; name one of the registered worker profiles")
	}
	if _, free := c.scope.Live(); free != nil && *free <= 0 {
		return authored{}, c.refusal(CodeMaxLiveWorkers, "", "no free worker slot; await a settlement first")
	}
	au, err := c.parseAuthored(raw)
	if err != nil {
		return authored{}, err
	}
	if allowed := c.scope.opts.AllowedModels; len(allowed) > 0 && (au.p.Model == nil || au.p.Model.Default == nil || *au.p.Model.Default == "") {
		// Without a model of its own an authored worker would run
		// whatever its executor defaults to, past AllowedModels.
		return authored{}, c.refusal(CodeInvalidIdentity, "model-not-allowed",
			"/profile/model/default: an authored profile must name its model, one of "+strings.Join(allowed, ", "))
	}
	if m, bad := disallowedModel(au.p, c.scope.opts.AllowedModels); bad {
		return authored{}, c.refusal(CodeInvalidIdentity, "model-not-allowed",
			"/profile"+m.Pointer+": model "+strconv.Quote(m.Model)+" is not one of "+strings.Join(c.scope.opts.AllowedModels, ", "))
	}
	if !c.authorizeHook {
		if sec := profile.ValidateSecurity(au.p, profile.SecurityPolicy{DenyConnections: true}); !sec.OK {
			for _, is := range sec.Issues {
				if is.Level == "error" {
					return authored{}, c.refusal(CodePreflightRefused, "not-authorized",
						"/profile"+is.Path+": "+is.Message+" (authored profiles may not run commands without an AuthorizeSpawn hook)")
				}
			}
		}
	}
	return au, nil
}

// resumeAuthored re-reads a journaled authored profile and checks it is
// the one the spawn recorded.
func resumeAuthored(r Record) (*profile.Profile, error) {
	b, err := canonjson.Canonical(r.ProfileDoc)
	if err != nil {
		return nil, err
	}
	p, digest, err := profile.ParseDigest(b)
	if err != nil {
		return nil, err
	}
	if digest != r.ProfileDigest {
		return nil, errors.New("the journaled authored profile's digest is " + strconv.Quote(digest) + ", the spawn recorded " + strconv.Quote(r.ProfileDigest))
	}
	return p, nil
}

// maxGuideNames bounds the registered profile names spawn_worker's
// description lists.
const maxGuideNames = 32

// authoringGuide is spawn_worker's description when authored profiles
// are accepted: how the manager authors a worker profile, and the
// fences one must fit (§9: the delegation server's default authoring
// supervisor authors its workers' profiles).
func (c *Coordinator) authoringGuide() string {
	var b strings.Builder
	b.WriteString("Spawn a worker on a task, reserved from the run's budget. profile is either the name of a registered worker profile")
	names := slices.Sorted(maps.Keys(c.profiles))
	if len(names) > 0 {
		if len(names) > maxGuideNames {
			names = append(names[:maxGuideNames], "…")
		}
		b.WriteString(" (" + strings.Join(names, ", ") + ")")
	}
	b.WriteString(`, or a worker profile you author for the task as an AgentProfile object, such as {"name": "researcher", "harness": "cli-base", "model": {"default": "<model>"}, "prompt": {"systemPrompt": "You research …"}}.`)
	if allowed := c.scope.opts.AllowedModels; len(allowed) > 0 {
		b.WriteString(" Its model.default is required and must be one of: " + strings.Join(allowed, ", ") + ".")
	}
	if !c.authorizeHook {
		b.WriteString(" It may not declare hooks, command (local) MCP servers or connections: such a profile is refused preflight-refused.")
	}
	b.WriteString(" A profile that does not validate is refused invalid-identity with the JSON pointer of its first problem: fix that member and spawn again. Returns workerId, live and freeSlots, or {error, reason} when refused.")
	return b.String()
}
