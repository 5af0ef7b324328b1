package contract_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/contract"
	"github.com/agentrt/agentrt/schema"
)

func brPtr[T any](v T) *T { return &v }

func brDigest(c byte) string { return "sha256:" + strings.Repeat(string(c), 64) }

// brSource is the exact source run of the reference's recorded fixtures.
func brSource() contract.ExactRunControlRef {
	return contract.ExactRunControlRef{RunID: "run-1", Provider: "tangle", EnvironmentID: "environment-source",
		SessionID: "session-1", ExecutionID: "execution-1", RequestDigest: brDigest('a')}
}

func brMeta(k, v string) map[string]canonjson.Value {
	return map[string]canonjson.Value{k: canonjson.StringValue(v)}
}

func brCheckpointMaterial() contract.WorkspaceCheckpointMaterial {
	return contract.WorkspaceCheckpointMaterial{Source: brSource(), Name: brPtr("branch boundary"), Metadata: brMeta("messageId", "message-4")}
}

func brCheckpointRequest(t *testing.T) *contract.WorkspaceCheckpointRequest {
	t.Helper()
	req, err := contract.NewWorkspaceCheckpointRequest("checkpoint-operation-1", brCheckpointMaterial())
	if err != nil {
		t.Fatal(err)
	}
	return req
}

func brCheckpointFor(req *contract.WorkspaceCheckpointRequest) *contract.WorkspaceCheckpointRef {
	return &contract.WorkspaceCheckpointRef{CheckpointID: "checkpoint-1", Provider: req.Source.Provider, Source: req.Source,
		IdempotencyKey: req.IdempotencyKey, RequestDigest: req.RequestDigest, CreatedAt: "2026-08-01T20:00:00.000Z", Metadata: req.Metadata}
}

func brForkMaterial(cp contract.WorkspaceCheckpointRef) contract.WorkspaceForkMaterial {
	return contract.WorkspaceForkMaterial{
		Checkpoint: cp,
		Name:       brPtr("branch destination"),
		Metadata:   brMeta("branchId", "branch-2"),
		Placement:  contract.PlacementInfo{Kind: "sandbox", SandboxID: brPtr("sandbox-2"), Region: brPtr("us-west")},
		Confidential: &contract.ConfidentialExecutionRequest{Requested: true, Nonce: brPtr("nonce-1"), Policy: brPtr("policy-1"),
			ProfileDigest: brPtr("sha256:fba729962f3b435ff189ff43efebb8860e666f1a087b50d3acae9adf6318f454")},
	}
}

func brForkRequest(t *testing.T) *contract.WorkspaceForkRequest {
	t.Helper()
	cp := brCheckpointFor(brCheckpointRequest(t))
	req, err := contract.NewWorkspaceForkRequest("fork-confidential", brForkMaterial(*cp))
	if err != nil {
		t.Fatal(err)
	}
	return req
}

func brForkedFor(req *contract.WorkspaceForkRequest) *contract.ForkedEnvironmentRef {
	requested := req.Confidential != nil && req.Confidential.Requested
	return &contract.ForkedEnvironmentRef{Provider: req.Checkpoint.Provider, EnvironmentID: "environment-destination",
		SourceEnvironmentID: req.Checkpoint.Source.EnvironmentID, Source: req.Checkpoint.Source,
		SourceCheckpointID: req.Checkpoint.CheckpointID, IdempotencyKey: req.IdempotencyKey, RequestDigest: req.RequestDigest,
		CreatedAt: "2026-08-01T20:00:01.000Z", Placement: req.Placement, ConfidentialRequested: requested, Metadata: req.Metadata}
}

func brMarshal(t *testing.T, x any) []byte {
	t.Helper()
	v, err := canonjson.ToValue(x)
	if err != nil {
		t.Fatal(err)
	}
	return canonjson.Marshal(v)
}

// brIssueAt reports whether err is a *schema.Error with an issue at path.
func brIssueAt(err error, path string) bool {
	var se *schema.Error
	if !errors.As(err, &se) {
		return false
	}
	for _, is := range se.Issues {
		if is.Path == path {
			return true
		}
	}
	return false
}

func TestBranchingRequestDigests(t *testing.T) {
	// BRN-03: the digest constructors agree with the reference's digests
	// recorded in the vectors (checkpoint, fork and cleanup fixtures).
	cpReq := brCheckpointRequest(t)
	if want := "sha256:fba729962f3b435ff189ff43efebb8860e666f1a087b50d3acae9adf6318f454"; cpReq.RequestDigest != want {
		t.Fatalf("checkpoint digest %s, want the reference's %s", cpReq.RequestDigest, want)
	}
	fork := brForkRequest(t)
	if want := "sha256:c1c558e2666b14150906885fb72693abc612a6e3cb895f216c1065566b2f2d88"; fork.RequestDigest != want {
		t.Fatalf("fork digest %s, want the reference's %s", fork.RequestDigest, want)
	}
	cleanup, err := contract.NewWorkspaceCleanupRequest("cleanup-1", contract.WorkspaceCleanupMaterial{Kind: contract.WorkspaceCleanupCheckpoint, TargetID: "checkpoint-1", Provider: "tangle"})
	if err != nil {
		t.Fatal(err)
	}
	if want := "sha256:1b8769d26470841e1667343b9bbf1108b1ffb7e1bfdc7e013aa8bfb15c365d3b"; cleanup.RequestDigest != want {
		t.Fatalf("cleanup digest %s, want the reference's %s", cleanup.RequestDigest, want)
	}

	// The key is not part of the material: the same material under
	// another key has the same digest.
	other, err := contract.NewWorkspaceCheckpointRequest("another-key", brCheckpointMaterial())
	if err != nil || other.RequestDigest != cpReq.RequestDigest {
		t.Fatalf("digest depends on the key: %v", err)
	}

	// BRN-06: every change of material changes the digest; presence
	// matters (an empty record is not an absent one).
	changes := map[string]func(m *contract.WorkspaceCheckpointMaterial){
		"name":           func(m *contract.WorkspaceCheckpointMaterial) { m.Name = brPtr("other") },
		"no name":        func(m *contract.WorkspaceCheckpointMaterial) { m.Name = nil },
		"metadata":       func(m *contract.WorkspaceCheckpointMaterial) { m.Metadata = brMeta("messageId", "message-5") },
		"empty metadata": func(m *contract.WorkspaceCheckpointMaterial) { m.Metadata = map[string]canonjson.Value{} },
		"no metadata":    func(m *contract.WorkspaceCheckpointMaterial) { m.Metadata = nil },
		"source run":     func(m *contract.WorkspaceCheckpointMaterial) { m.Source.RunID = "run-2" },
	}
	seen := map[string]string{cpReq.RequestDigest: "original"}
	for name, change := range changes {
		m := brCheckpointMaterial()
		change(&m)
		d, err := contract.WorkspaceCheckpointRequestDigest(m)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if prev, dup := seen[d]; dup {
			t.Errorf("%s: same digest as %s", name, prev)
		}
		seen[d] = name
	}

	// Invalid material has no digest.
	bad := brCheckpointMaterial()
	bad.Source.SessionID = ""
	if _, err := contract.WorkspaceCheckpointRequestDigest(bad); err == nil {
		t.Error("digest of invalid material")
	}
	if _, err := contract.NewWorkspaceCleanupRequest("op", contract.WorkspaceCleanupMaterial{Kind: "volume", TargetID: "x", Provider: "p"}); err == nil {
		t.Error("cleanup of an unknown kind")
	}
}

func TestBranchingTamperedDigest(t *testing.T) {
	// BRN-03: a tampered or stale digest is refused at /requestDigest.
	cp := brCheckpointRequest(t)
	cp.Name = brPtr("renamed after digesting")
	if _, err := contract.ParseWorkspaceCheckpointRequest(brMarshal(t, cp)); !brIssueAt(err, "/requestDigest") {
		t.Errorf("stale checkpoint digest: %v", err)
	}
	fork := brForkRequest(t)
	fork.Placement.Region = brPtr("eu-west")
	if _, err := contract.ParseWorkspaceForkRequest(brMarshal(t, fork)); !brIssueAt(err, "/requestDigest") {
		t.Errorf("placement is not part of the fork identity: %v", err)
	}
	cleanup, _ := contract.NewWorkspaceCleanupRequest("cleanup-1", contract.WorkspaceCleanupMaterial{Kind: contract.WorkspaceCleanupFork, TargetID: "env-1", Provider: "tangle"})
	cleanup.Kind = contract.WorkspaceCleanupCheckpoint
	if _, err := contract.ParseWorkspaceCleanupRequest(brMarshal(t, cleanup)); !brIssueAt(err, "/requestDigest") {
		t.Errorf("swapped cleanup kind kept its digest: %v", err)
	}
	// A fork asking for confidentiality must bind nonce, policy and
	// profile digest.
	m := brForkMaterial(fork.Checkpoint)
	m.Confidential = &contract.ConfidentialExecutionRequest{Requested: true, Nonce: brPtr("n")}
	if _, err := contract.NewWorkspaceForkRequest("k", m); err == nil {
		t.Error("incomplete confidential fork request accepted")
	}
}

func TestBranchingProtoKeyIsMaterial(t *testing.T) {
	// The metadata records (checkpoint and fork metadata, placement
	// providerMetadata) keep every member, "__proto__" included, and the
	// digest is computed over the validated material: such a member is
	// part of the request identity. Strict objects (source, placement)
	// drop a "__proto__" member, so it changes nothing there. This is the
	// rule behind the reference refusing the vector case
	// "proto-key@/checkpoint/metadata" at /requestDigest.
	fork := brForkRequest(t)
	withProto := func(raw []byte, at string) []byte {
		v, err := canonjson.Decode(raw)
		if err != nil {
			t.Fatal(err)
		}
		return canonjson.Marshal(brAddMember(v, strings.Split(at, "/"), "__proto__", canonjson.StringValue("x")))
	}
	raw := brMarshal(t, fork)

	if _, err := contract.ParseWorkspaceForkRequest(withProto(raw, "checkpoint/metadata")); !brIssueAt(err, "/requestDigest") {
		t.Errorf("__proto__ in the checkpoint metadata did not change the identity: %v", err)
	}
	if _, err := contract.ParseWorkspaceForkRequest(withProto(raw, "metadata")); !brIssueAt(err, "/requestDigest") {
		t.Errorf("__proto__ in the fork metadata did not change the identity: %v", err)
	}
	for _, at := range []string{"placement", "checkpoint/source", "checkpoint", ""} {
		got, err := contract.ParseWorkspaceForkRequest(withProto(raw, at))
		if err != nil {
			t.Errorf("__proto__ in strict object %q: %v", at, err)
			continue
		}
		if !contract.SameRunControlRef(got, fork) {
			t.Errorf("__proto__ in strict object %q was kept", at)
		}
	}

	// Built with the member, the digest covers it and the request
	// round-trips with it.
	m := fork.WorkspaceForkMaterial
	m.Checkpoint.Metadata = map[string]canonjson.Value{"messageId": canonjson.StringValue("message-4"), "__proto__": canonjson.StringValue("x")}
	withMember, err := contract.NewWorkspaceForkRequest(fork.IdempotencyKey, m)
	if err != nil {
		t.Fatal(err)
	}
	if withMember.RequestDigest == fork.RequestDigest {
		t.Fatal("the digest ignores a __proto__ metadata member")
	}
	again, err := contract.ParseWorkspaceForkRequest(brMarshal(t, withMember))
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := again.Checkpoint.Metadata["__proto__"]; !ok {
		t.Fatal("the __proto__ metadata member was dropped")
	}
}

// brAddMember returns v with member name=value added to the object at path
// (empty tokens are skipped).
func brAddMember(v canonjson.Value, path []string, name string, value canonjson.Value) canonjson.Value {
	for len(path) > 0 && path[0] == "" {
		path = path[1:]
	}
	members := append([]canonjson.Member(nil), v.Members()...)
	if len(path) == 0 {
		return canonjson.ObjectValue(append(members, canonjson.Member{Name: name, Value: value}))
	}
	for i, m := range members {
		if m.Name == path[0] {
			members[i].Value = brAddMember(m.Value, path[1:], name, value)
		}
	}
	return canonjson.ObjectValue(members)
}

func TestBranchingMaterialBounds(t *testing.T) {
	// Material is bounded as digest input: metadata that is valid on its
	// own (15 nested levels) sits one level deeper in the material and
	// exceeds the depth bound, so the request has no digest and is refused.
	deep := canonjson.ObjectValue(nil)
	for range 15 {
		deep = canonjson.ObjectValue([]canonjson.Member{{Name: "n", Value: deep}})
	}
	if !contract.IsBoundedJSON(deep) {
		t.Fatal("fixture metadata is not bounded on its own")
	}
	m := brCheckpointMaterial()
	m.Metadata = map[string]canonjson.Value{"n": deep.Members()[0].Value}
	if _, err := contract.WorkspaceCheckpointRequestDigest(m); !errors.Is(err, contract.ErrBranchingMaterial) {
		t.Fatalf("deep material digested: %v", err)
	}
	req := brCheckpointRequest(t)
	req.Metadata = m.Metadata
	if _, err := contract.ParseWorkspaceCheckpointRequest(brMarshal(t, req)); !brIssueAt(err, "") {
		t.Fatalf("deep material accepted: %v", err)
	}
	// One level less is fine.
	m.Metadata = map[string]canonjson.Value{"n": deep.Members()[0].Value.Members()[0].Value}
	if _, err := contract.WorkspaceCheckpointRequestDigest(m); err != nil {
		t.Fatal(err)
	}
	// A lone surrogate has no canonical form, so no digest.
	m.Metadata = brMeta("k", "\xed\xa0\x80")
	if _, err := contract.WorkspaceCheckpointRequestDigest(m); !errors.Is(err, contract.ErrBranchingMaterial) {
		t.Fatalf("lone surrogate digested: %v", err)
	}
}

func TestCheckpointResultMatchesRequest(t *testing.T) {
	// BRN-04, BRN-05, BRN-06: only a created, replayed or found answer
	// whose checkpoint repeats the request's identity matches.
	req := brCheckpointRequest(t)
	ok := func() *contract.WorkspaceCheckpointResult {
		return &contract.WorkspaceCheckpointResult{Status: contract.BranchingCreated, IdempotencyKey: req.IdempotencyKey,
			RequestDigest: req.RequestDigest, Checkpoint: brCheckpointFor(req)}
	}
	otherReq, _ := contract.NewWorkspaceCheckpointRequest(req.IdempotencyKey, contract.WorkspaceCheckpointMaterial{Source: req.Source, Name: brPtr("changed")})
	cases := []struct {
		name   string
		change func(r *contract.WorkspaceCheckpointResult)
		want   bool
	}{
		{"created", func(*contract.WorkspaceCheckpointResult) {}, true},
		{"replayed", func(r *contract.WorkspaceCheckpointResult) { r.Status = contract.BranchingReplayed }, true},
		{"conflict", func(r *contract.WorkspaceCheckpointResult) {
			*r = contract.WorkspaceCheckpointResult{Status: contract.BranchingConflict, IdempotencyKey: req.IdempotencyKey,
				RequestDigest: req.RequestDigest, ExistingRequestDigest: &otherReq.RequestDigest}
		}, false},
		{"unknown", func(r *contract.WorkspaceCheckpointResult) {
			*r = contract.WorkspaceCheckpointResult{Status: contract.BranchingUnknown, IdempotencyKey: req.IdempotencyKey,
				RequestDigest: req.RequestDigest, Message: brPtr("timeout"), Retryable: brPtr(true)}
		}, false},
		{"answer for another request", func(r *contract.WorkspaceCheckpointResult) {
			r.RequestDigest, r.Checkpoint.RequestDigest = otherReq.RequestDigest, otherReq.RequestDigest
		}, false},
		{"answer for another key", func(r *contract.WorkspaceCheckpointResult) {
			r.IdempotencyKey, r.Checkpoint.IdempotencyKey = "other", "other"
		}, false},
		{"checkpoint stamped with another key (invalid)", func(r *contract.WorkspaceCheckpointResult) { r.Checkpoint.IdempotencyKey = "other" }, false},
		{"checkpoint of another run", func(r *contract.WorkspaceCheckpointResult) { r.Checkpoint.Source.ExecutionID = "execution-2" }, false},
		{"checkpoint without the metadata", func(r *contract.WorkspaceCheckpointResult) { r.Checkpoint.Metadata = nil }, false},
		{"checkpoint with other metadata", func(r *contract.WorkspaceCheckpointResult) { r.Checkpoint.Metadata = brMeta("messageId", "x") }, false},
		{"checkpoint from another provider", func(r *contract.WorkspaceCheckpointResult) {
			r.Checkpoint.Provider, r.Checkpoint.Source.Provider = "other", "other"
		}, false},
		{"no checkpoint (invalid)", func(r *contract.WorkspaceCheckpointResult) { r.Checkpoint = nil }, false},
	}
	for _, c := range cases {
		res := ok()
		c.change(res)
		if got := contract.WorkspaceCheckpointResultMatchesRequest(req, res); got != c.want {
			t.Errorf("%s: matches = %v, want %v", c.name, got, c.want)
		}
	}

	// Lookups (BRN-05): found recovers the checkpoint; nothing else does.
	lookup := req.Lookup()
	if _, err := contract.ParseWorkspaceOperationLookupRequest(brMarshal(t, lookup)); err != nil {
		t.Fatal(err)
	}
	found := &contract.WorkspaceCheckpointLookupResult{Status: contract.BranchingFound, IdempotencyKey: lookup.IdempotencyKey,
		RequestDigest: lookup.RequestDigest, Checkpoint: brCheckpointFor(req)}
	if !contract.WorkspaceCheckpointLookupResultMatchesRequest(req, found) {
		t.Error("found does not match")
	}
	notFound := &contract.WorkspaceCheckpointLookupResult{Status: contract.BranchingNotFound, IdempotencyKey: lookup.IdempotencyKey, RequestDigest: lookup.RequestDigest}
	if _, err := contract.ParseWorkspaceCheckpointLookupResult(brMarshal(t, notFound)); err != nil {
		t.Fatal(err)
	}
	if contract.WorkspaceCheckpointLookupResultMatchesRequest(req, notFound) {
		t.Error("not_found matches")
	}
	// A result shape is not a lookup shape: found is not a result status.
	asResult := &contract.WorkspaceCheckpointResult{Status: contract.BranchingFound, IdempotencyKey: req.IdempotencyKey, RequestDigest: req.RequestDigest, Checkpoint: brCheckpointFor(req)}
	if contract.WorkspaceCheckpointResultMatchesRequest(req, asResult) {
		t.Error("found matched as a checkpoint result")
	}
	if contract.WorkspaceCheckpointResultMatchesRequest(nil, ok()) || contract.WorkspaceCheckpointResultMatchesRequest(req, nil) {
		t.Error("nil matches")
	}
}

func TestBranchingAnswerRules(t *testing.T) {
	// BRN-04 and BRN-06 as schema rules of answers.
	req := brCheckpointRequest(t)
	cases := []struct {
		name string
		res  contract.WorkspaceCheckpointResult
		path string // "" means valid
	}{
		{"self conflict", contract.WorkspaceCheckpointResult{Status: contract.BranchingConflict, IdempotencyKey: "k",
			RequestDigest: req.RequestDigest, ExistingRequestDigest: &req.RequestDigest}, "/existingRequestDigest"},
		{"conflict with another digest", contract.WorkspaceCheckpointResult{Status: contract.BranchingConflict, IdempotencyKey: "k",
			RequestDigest: req.RequestDigest, ExistingRequestDigest: brPtr(brDigest('b'))}, ""},
		{"conflict carrying a checkpoint", contract.WorkspaceCheckpointResult{Status: contract.BranchingConflict, IdempotencyKey: "k",
			RequestDigest: req.RequestDigest, ExistingRequestDigest: brPtr(brDigest('b')), Checkpoint: brCheckpointFor(req)}, "@"},
		{"checkpoint of another operation", contract.WorkspaceCheckpointResult{Status: contract.BranchingCreated, IdempotencyKey: "k",
			RequestDigest: req.RequestDigest, Checkpoint: brCheckpointFor(req)}, "/checkpoint"},
		{"unknown without retryable", contract.WorkspaceCheckpointResult{Status: contract.BranchingUnknown, IdempotencyKey: "k",
			RequestDigest: req.RequestDigest, Message: brPtr("m")}, "/retryable"},
		{"unknown with an empty message", contract.WorkspaceCheckpointResult{Status: contract.BranchingUnknown, IdempotencyKey: "k",
			RequestDigest: req.RequestDigest, Message: brPtr(""), Retryable: brPtr(false)}, "/message"},
	}
	for _, c := range cases {
		_, err := contract.ParseWorkspaceCheckpointResult(brMarshal(t, c.res))
		switch {
		case c.path == "" && err != nil:
			t.Errorf("%s: %v", c.name, err)
		case c.path == "@" && err == nil, c.path != "" && c.path != "@" && !brIssueAt(err, c.path):
			t.Errorf("%s: want an issue at %q, got %v", c.name, c.path, err)
		}
	}
}

func TestForkResultMatchesRequest(t *testing.T) {
	// BRN-04: a fork answer is used only when its environment is the fork
	// of the requested checkpoint with the requested placement,
	// confidentiality and metadata.
	req := brForkRequest(t)
	cases := []struct {
		name   string
		change func(e *contract.ForkedEnvironmentRef)
		want   bool
	}{
		{"exact", func(*contract.ForkedEnvironmentRef) {}, true},
		{"other checkpoint", func(e *contract.ForkedEnvironmentRef) { e.SourceCheckpointID = "checkpoint-2" }, false},
		{"other placement", func(e *contract.ForkedEnvironmentRef) { e.Placement.Region = brPtr("eu-west") }, false},
		{"placement without region", func(e *contract.ForkedEnvironmentRef) { e.Placement.Region = nil }, false},
		{"confidentiality not recorded", func(e *contract.ForkedEnvironmentRef) { e.ConfidentialRequested = false }, false},
		{"other metadata", func(e *contract.ForkedEnvironmentRef) { e.Metadata = brMeta("branchId", "branch-3") }, false},
		{"no metadata", func(e *contract.ForkedEnvironmentRef) { e.Metadata = nil }, false},
		{"other source run", func(e *contract.ForkedEnvironmentRef) { e.Source.SessionID = "session-2" }, false},
		{"source environment reused (invalid)", func(e *contract.ForkedEnvironmentRef) { e.EnvironmentID = e.SourceEnvironmentID }, false},
		{"other key", func(e *contract.ForkedEnvironmentRef) { e.IdempotencyKey = "other" }, false},
		{"legacy confidential flag is ignored", func(e *contract.ForkedEnvironmentRef) { e.Confidential = brPtr(true) }, true},
	}
	for _, c := range cases {
		env := brForkedFor(req)
		c.change(env)
		res := &contract.WorkspaceForkResult{Status: contract.BranchingCreated, IdempotencyKey: req.IdempotencyKey, RequestDigest: req.RequestDigest, Environment: env}
		if got := contract.WorkspaceForkResultMatchesRequest(req, res); got != c.want {
			t.Errorf("%s: matches = %v, want %v", c.name, got, c.want)
		}
		lookup := &contract.WorkspaceForkLookupResult{Status: contract.BranchingFound, IdempotencyKey: req.IdempotencyKey, RequestDigest: req.RequestDigest, Environment: env}
		if got := contract.WorkspaceForkLookupResultMatchesRequest(req, lookup); got != c.want {
			t.Errorf("%s (lookup): matches = %v, want %v", c.name, got, c.want)
		}
	}
	// A non-confidential request is matched by a fork that records no
	// request for confidentiality.
	m := req.WorkspaceForkMaterial
	m.Confidential = nil
	plain, err := contract.NewWorkspaceForkRequest("fork-plain", m)
	if err != nil {
		t.Fatal(err)
	}
	env := brForkedFor(plain)
	res := &contract.WorkspaceForkResult{Status: contract.BranchingReplayed, IdempotencyKey: plain.IdempotencyKey, RequestDigest: plain.RequestDigest, Environment: env}
	if !contract.WorkspaceForkResultMatchesRequest(plain, res) {
		t.Error("plain fork does not match")
	}
	notFound := &contract.WorkspaceForkLookupResult{Status: contract.BranchingNotFound, IdempotencyKey: plain.IdempotencyKey, RequestDigest: plain.RequestDigest}
	if contract.WorkspaceForkLookupResultMatchesRequest(plain, notFound) {
		t.Error("not_found matches")
	}
}

func TestForkedEnvironmentRules(t *testing.T) {
	req := brForkRequest(t)
	att := brAttestation(req, brForkedFor(req))
	cases := []struct {
		name   string
		change func(e *contract.ForkedEnvironmentRef)
		path   string
	}{
		{"valid", func(*contract.ForkedEnvironmentRef) {}, ""},
		{"attested", func(e *contract.ForkedEnvironmentRef) { e.ConfidentialAttestation = att }, ""},
		{"source environment reused", func(e *contract.ForkedEnvironmentRef) { e.EnvironmentID = e.SourceEnvironmentID }, "/environmentId"},
		{"source environment id disagrees", func(e *contract.ForkedEnvironmentRef) { e.SourceEnvironmentID = "environment-x" }, "/sourceEnvironmentId"},
		{"provider disagrees", func(e *contract.ForkedEnvironmentRef) { e.Provider = "other" }, "/provider"},
		{"attestation of another environment", func(e *contract.ForkedEnvironmentRef) {
			a := *att
			a.EnvironmentID = "environment-x"
			e.ConfidentialAttestation = &a
		}, "/confidentialAttestation/environmentId"},
		{"attestation without a request", func(e *contract.ForkedEnvironmentRef) {
			e.ConfidentialAttestation, e.ConfidentialRequested = att, false
		}, "/confidentialAttestation"},
	}
	for _, c := range cases {
		env := brForkedFor(req)
		c.change(env)
		_, err := contract.ParseForkedEnvironmentRef(brMarshal(t, env))
		if c.path == "" && err != nil || c.path != "" && !brIssueAt(err, c.path) {
			t.Errorf("%s: want issue at %q, got %v", c.name, c.path, err)
		}
	}
}

func brAttestation(req *contract.WorkspaceForkRequest, env *contract.ForkedEnvironmentRef) *contract.ConfidentialAttestation {
	return &contract.ConfidentialAttestation{Provider: env.Provider, Requested: true, Nonce: *req.Confidential.Nonce,
		Measurement: brDigest('4'), EnvironmentID: env.EnvironmentID, Source: env.Source, RequestDigest: env.RequestDigest,
		ProfileDigest: *req.Confidential.ProfileDigest, Policy: *req.Confidential.Policy, Quote: "quote-1",
		ProviderKeyID: "tangle-key-1", ProviderSignature: "signature-1", VerifiedAt: "2026-08-01T20:00:02.000Z"}
}

func TestForkConfidentialityVerified(t *testing.T) {
	req := brForkRequest(t)
	accept := func(contract.ConfidentialAttestation, contract.ConfidentialExecutionEnvironment) bool { return true }
	reject := func(contract.ConfidentialAttestation, contract.ConfidentialExecutionEnvironment) bool { return false }
	cases := []struct {
		name   string
		change func(e *contract.ForkedEnvironmentRef, a *contract.ConfidentialAttestation)
		verify contract.ConfidentialAttestationVerifier
		want   bool
	}{
		{"bound and verified", func(*contract.ForkedEnvironmentRef, *contract.ConfidentialAttestation) {}, accept, true},
		{"no verifier", func(*contract.ForkedEnvironmentRef, *contract.ConfidentialAttestation) {}, nil, false},
		{"signature refused", func(*contract.ForkedEnvironmentRef, *contract.ConfidentialAttestation) {}, reject, false},
		{"no attestation", func(e *contract.ForkedEnvironmentRef, _ *contract.ConfidentialAttestation) {
			e.ConfidentialAttestation = nil
		}, accept, false},
		{"legacy flag only", func(e *contract.ForkedEnvironmentRef, _ *contract.ConfidentialAttestation) {
			e.ConfidentialAttestation, e.Confidential = nil, brPtr(true)
		}, accept, false},
		{"other nonce", func(_ *contract.ForkedEnvironmentRef, a *contract.ConfidentialAttestation) { a.Nonce = "nonce-2" }, accept, false},
		{"other policy", func(_ *contract.ForkedEnvironmentRef, a *contract.ConfidentialAttestation) { a.Policy = "policy-2" }, accept, false},
		{"other profile", func(_ *contract.ForkedEnvironmentRef, a *contract.ConfidentialAttestation) {
			a.ProfileDigest = brDigest('9')
		}, accept, false},
		{"other admission digest", func(_ *contract.ForkedEnvironmentRef, a *contract.ConfidentialAttestation) {
			a.RequestDigest = brDigest('9')
		}, accept, false},
		{"other source run", func(_ *contract.ForkedEnvironmentRef, a *contract.ConfidentialAttestation) { a.Source.RunID = "run-9" }, accept, false},
		{"other provider", func(_ *contract.ForkedEnvironmentRef, a *contract.ConfidentialAttestation) { a.Provider = "other" }, accept, false},
		{"fork of another placement", func(e *contract.ForkedEnvironmentRef, _ *contract.ConfidentialAttestation) {
			e.Placement.SandboxID = brPtr("s")
		}, accept, false},
		{"quote copied as signature", func(_ *contract.ForkedEnvironmentRef, a *contract.ConfidentialAttestation) {
			a.ProviderSignature = a.Quote
		}, accept, false},
	}
	for _, c := range cases {
		env := brForkedFor(req)
		att := brAttestation(req, env)
		env.ConfidentialAttestation = att
		c.change(env, att)
		if got := contract.ForkedEnvironmentConfidentialityVerified(req, env, c.verify); got != c.want {
			t.Errorf("%s: verified = %v, want %v", c.name, got, c.want)
		}
	}
	// A fork that did not ask for confidentiality is never confidential.
	m := req.WorkspaceForkMaterial
	m.Confidential = nil
	plain, _ := contract.NewWorkspaceForkRequest("fork-plain", m)
	if contract.ForkedEnvironmentConfidentialityVerified(plain, brForkedFor(plain), accept) {
		t.Error("plain fork verified confidential")
	}
}

func TestCleanupAcknowledgementMatches(t *testing.T) {
	// BRN-07: an acknowledgement confirms only the exact provider, kind
	// and target of its request.
	req, err := contract.NewWorkspaceCleanupRequest("cleanup-1", contract.WorkspaceCleanupMaterial{Kind: contract.WorkspaceCleanupCheckpoint, TargetID: "checkpoint-1", Provider: "tangle"})
	if err != nil {
		t.Fatal(err)
	}
	ack := func(op string, m contract.WorkspaceCleanupMaterial, status string) *contract.WorkspaceCleanupAcknowledgement {
		d, err := contract.WorkspaceCleanupRequestDigest(m)
		if err != nil {
			t.Fatal(err)
		}
		a := &contract.WorkspaceCleanupAcknowledgement{OperationID: op, WorkspaceCleanupMaterial: m, RequestDigest: d, Status: status}
		if status == contract.WorkspaceCleanupInUse {
			a.Message, a.BlockingTargetIDs = brPtr("forks depend on it"), []string{"environment-destination"}
		}
		return a
	}
	same := req.WorkspaceCleanupMaterial
	cases := []struct {
		name string
		ack  *contract.WorkspaceCleanupAcknowledgement
		want bool
	}{
		{"deleted", ack("cleanup-1", same, contract.WorkspaceCleanupDeleted), true},
		{"already absent (repeat)", ack("cleanup-1", same, contract.WorkspaceCleanupAlreadyAbsent), true},
		{"in use (BRN-08)", ack("cleanup-1", same, contract.WorkspaceCleanupInUse), false},
		{"other operation", ack("cleanup-2", same, contract.WorkspaceCleanupDeleted), false},
		{"other kind", ack("cleanup-1", contract.WorkspaceCleanupMaterial{Kind: contract.WorkspaceCleanupFork, TargetID: "checkpoint-1", Provider: "tangle"}, contract.WorkspaceCleanupDeleted), false},
		{"other target", ack("cleanup-1", contract.WorkspaceCleanupMaterial{Kind: contract.WorkspaceCleanupCheckpoint, TargetID: "checkpoint-2", Provider: "tangle"}, contract.WorkspaceCleanupDeleted), false},
		{"other provider", ack("cleanup-1", contract.WorkspaceCleanupMaterial{Kind: contract.WorkspaceCleanupCheckpoint, TargetID: "checkpoint-1", Provider: "other"}, contract.WorkspaceCleanupDeleted), false},
	}
	for _, c := range cases {
		if got := contract.WorkspaceCleanupAcknowledgementMatches(req, c.ack); got != c.want {
			t.Errorf("%s: matches = %v, want %v", c.name, got, c.want)
		}
	}
	inUse := ack("cleanup-1", same, contract.WorkspaceCleanupInUse)
	if got := inUse.Blocking(); len(got) != 1 || got[0] != "environment-destination" {
		t.Errorf("Blocking() = %v", got)
	}
	if ack("cleanup-1", same, contract.WorkspaceCleanupDeleted).Blocking() != nil {
		t.Error("Blocking() of a deletion")
	}
}

func TestCleanupAcknowledgementRules(t *testing.T) {
	// BRN-08 and the status rules of cleanup acknowledgements.
	m := contract.WorkspaceCleanupMaterial{Kind: contract.WorkspaceCleanupCheckpoint, TargetID: "checkpoint-1", Provider: "tangle"}
	d, _ := contract.WorkspaceCleanupRequestDigest(m)
	base := func(status string) contract.WorkspaceCleanupAcknowledgement {
		return contract.WorkspaceCleanupAcknowledgement{OperationID: "op", WorkspaceCleanupMaterial: m, RequestDigest: d, Status: status}
	}
	with := func(a contract.WorkspaceCleanupAcknowledgement, f func(*contract.WorkspaceCleanupAcknowledgement)) contract.WorkspaceCleanupAcknowledgement {
		f(&a)
		return a
	}
	cases := []struct {
		name string
		ack  contract.WorkspaceCleanupAcknowledgement
		path string
	}{
		{"deleted", base(contract.WorkspaceCleanupDeleted), ""},
		{"in_use with blockers", with(base(contract.WorkspaceCleanupInUse), func(a *contract.WorkspaceCleanupAcknowledgement) {
			a.Message, a.BlockingTargetIDs = brPtr("m"), []string{"env-1", "env-2"}
		}), ""},
		{"in_use without blockers", with(base(contract.WorkspaceCleanupInUse), func(a *contract.WorkspaceCleanupAcknowledgement) { a.Message = brPtr("m") }), "/blockingTargetIds"},
		{"in_use without message", with(base(contract.WorkspaceCleanupInUse), func(a *contract.WorkspaceCleanupAcknowledgement) { a.BlockingTargetIDs = []string{"e"} }), "/message"},
		{"duplicate blockers", with(base(contract.WorkspaceCleanupInUse), func(a *contract.WorkspaceCleanupAcknowledgement) {
			a.Message, a.BlockingTargetIDs = brPtr("m"), []string{"e", "e"}
		}), "/blockingTargetIds"},
		{"empty blockers", with(base(contract.WorkspaceCleanupInUse), func(a *contract.WorkspaceCleanupAcknowledgement) {
			a.Message, a.BlockingTargetIDs = brPtr("m"), []string{}
		}), "/blockingTargetIds"},
		{"deleted with blockers", with(base(contract.WorkspaceCleanupDeleted), func(a *contract.WorkspaceCleanupAcknowledgement) { a.BlockingTargetIDs = []string{"e"} }), "/blockingTargetIds"},
		{"unknown without retryable", with(base(contract.WorkspaceCleanupUnknown), func(a *contract.WorkspaceCleanupAcknowledgement) { a.Message = brPtr("m") }), "/retryable"},
		{"transport failure", with(base(contract.WorkspaceCleanupTransportFailure), func(a *contract.WorkspaceCleanupAcknowledgement) {
			a.Message, a.Retryable = brPtr("m"), brPtr(true)
		}), ""},
		{"conflict without existing", with(base(contract.WorkspaceCleanupConflict), func(a *contract.WorkspaceCleanupAcknowledgement) { a.Message = brPtr("m") }), "/existingRequestDigest"},
		{"conflict with itself", with(base(contract.WorkspaceCleanupConflict), func(a *contract.WorkspaceCleanupAcknowledgement) {
			a.Message, a.ExistingRequestDigest = brPtr("m"), &d
		}), "/existingRequestDigest"},
		{"conflict with another", with(base(contract.WorkspaceCleanupConflict), func(a *contract.WorkspaceCleanupAcknowledgement) {
			a.Message, a.ExistingRequestDigest = brPtr("m"), brPtr(brDigest('b'))
		}), ""},
		{"existing digest without conflict", with(base(contract.WorkspaceCleanupDeleted), func(a *contract.WorkspaceCleanupAcknowledgement) {
			a.ExistingRequestDigest = brPtr(brDigest('b'))
		}), "/existingRequestDigest"},
		{"digest of another target", with(base(contract.WorkspaceCleanupDeleted), func(a *contract.WorkspaceCleanupAcknowledgement) { a.TargetID = "checkpoint-2" }), "/requestDigest"},
	}
	for _, c := range cases {
		_, err := contract.ParseWorkspaceCleanupAcknowledgement(brMarshal(t, c.ack))
		if c.path == "" && err != nil || c.path != "" && !brIssueAt(err, c.path) {
			t.Errorf("%s: want issue at %q, got %v", c.name, c.path, err)
		}
	}
}
