package conformance

import (
	"github.com/agentrt/agentrt/canonjson"
)

// ManifestSchema is the exact schemaVersion of the manifest.
const ManifestSchema = "agentrt/conformance-manifest/v1"

// ManifestFile is the conventional file name of the manifest, uploaded
// beside the release archive.
const ManifestFile = "agentrt-conformance-manifest.json"

// VerifierTool names the verifier recorded in verifiedBy.tool.
const VerifierTool = "agentrt conformance verify"

// Status is the resolved status of a capability.
type Status string

// The capability statuses.
const (
	Supported   Status = "supported"
	Unsupported Status = "unsupported"
	Unproven    Status = "unproven"
)

// Statuses lists every capability status in report order.
var Statuses = []Status{Supported, Unsupported, Unproven}

// CaseStatus is what the test run reported for one declared case.
type CaseStatus string

// The case statuses. Go tests report passed, failed or skipped; pending
// and todo belong to the reference vocabulary and are accepted (and never
// count as a pass); missing means the run did not report the case.
const (
	Passed  CaseStatus = "passed"
	Failed  CaseStatus = "failed"
	Skipped CaseStatus = "skipped"
	Pending CaseStatus = "pending"
	Todo    CaseStatus = "todo"
	Missing CaseStatus = "missing"
)

func validStatus(s Status) bool {
	return s == Supported || s == Unsupported || s == Unproven
}

func validCaseStatus(s CaseStatus) bool {
	switch s {
	case Passed, Failed, Skipped, Pending, Todo, Missing:
		return true
	}
	return false
}

// Manifest is the conformance manifest of one module archive.
type Manifest struct {
	SchemaVersion string  `json:"schemaVersion"`
	Package       Package `json:"package"`
	// Cohort is the cohort report verbatim.
	Cohort          canonjson.Value       `json:"cohort"`
	SandboxVersions SandboxVersions       `json:"sandboxVersions"`
	Environment     Environment           `json:"environment"`
	Capabilities    map[string]Capability `json:"capabilities"`
	VerifiedBy      VerifiedBy            `json:"verifiedBy"`
	// Digest is ContentHash of the manifest without this member.
	Digest string `json:"digest"`
}

// Package identifies the archive the manifest speaks for.
type Package struct {
	// Name is the module path.
	Name string `json:"name"`
	// Version is the module version the archive was built as.
	Version string `json:"version"`
	// SourceCommit is the full git commit the archive was built from.
	SourceCommit string `json:"sourceCommit"`
	// SHA256 is the lowercase hex SHA-256 of the archive bytes.
	SHA256        string        `json:"sha256"`
	BuildIdentity BuildIdentity `json:"buildIdentity"`
}

// BuildIdentity records what else decided the manifest's content.
type BuildIdentity struct {
	// CapabilityMap is the lowercase hex SHA-256 of capabilities.json.
	CapabilityMap string `json:"capabilityMap"`
	// PackageManager is the go command's version that ran the tests.
	PackageManager string `json:"packageManager"`
}

// SandboxVersions names the range of execution backends the module
// declares and the exact versions a consumer was verified against.
type SandboxVersions struct {
	PeerRange string   `json:"peerRange"`
	Verified  []string `json:"verified"`
}

// Environment is where the evidence ran.
type Environment struct {
	// Go is the Go version (go env GOVERSION).
	Go string `json:"go"`
	// Platform is GOOS-GOARCH.
	Platform string `json:"platform"`
}

// Capability is the resolved entry of one capability.
type Capability struct {
	Status   Status     `json:"status"`
	Scenario string     `json:"scenario"`
	Summary  string     `json:"summary"`
	Evidence []Evidence `json:"evidence"`
	// ResultDigest is ContentHash of Evidence.
	ResultDigest string `json:"resultDigest"`
}

// Evidence is one test file with the hash of its bytes and the observed
// status of each declared case.
type Evidence struct {
	File   string `json:"file"`
	SHA256 string `json:"sha256"`
	Cases  []Case `json:"cases"`
}

// Case is one declared case and what the run reported for it.
type Case struct {
	Name   string     `json:"name"`
	Status CaseStatus `json:"status"`
}

// VerifiedBy names the tool that verifies the manifest.
type VerifiedBy struct {
	Tool    string `json:"tool"`
	Version string `json:"version"`
}

// Resolve returns the status of a capability whose declared cases were
// observed with the given statuses (§8): no cases → unproven; any failed
// → unsupported; all passed → supported; anything else → unproven.
func Resolve(cases []CaseStatus) Status {
	if len(cases) == 0 {
		return Unproven
	}
	all := true
	for _, c := range cases {
		if c == Failed {
			return Unsupported
		}
		if c != Passed {
			all = false
		}
	}
	if all {
		return Supported
	}
	return Unproven
}

// caseStatuses flattens the observed statuses of a capability's evidence.
func caseStatuses(ev []Evidence) []CaseStatus {
	var out []CaseStatus
	for _, e := range ev {
		for _, c := range e.Cases {
			out = append(out, c.Status)
		}
	}
	return out
}

// ParseManifest strictly decodes a manifest: unknown or missing members
// and wrong types are refused with a *ValidationError carrying the JSON
// pointer. It checks shape only; [Verify] recomputes the content. The
// returned Value is the document as decoded, which verification hashes.
func ParseManifest(data []byte) (*Manifest, canonjson.Value, error) {
	var m Manifest
	v, err := decodeInto("manifest", data, &m)
	if err != nil {
		return nil, v, err
	}
	if m.Capabilities == nil {
		return nil, v, &ValidationError{Document: "manifest", Pointer: ptr("capabilities"), Reason: "missing"}
	}
	return &m, v, nil
}

// Encode returns the canonical JSON of m followed by a newline: the bytes
// of the manifest file.
func (m *Manifest) Encode() ([]byte, error) {
	v, err := canonjson.ToValue(m)
	if err != nil {
		return nil, err
	}
	b, err := canonjson.Canonical(v)
	if err != nil {
		return nil, err
	}
	return append(b, '\n'), nil
}

// Seal sets every ResultDigest and then Digest from the current content.
// Emit seals; tests use Seal to forge a manifest whose digests agree.
func (m *Manifest) Seal() error {
	for k, c := range m.Capabilities {
		ev, err := canonjson.ToValue(c.Evidence)
		if err != nil {
			return err
		}
		if c.ResultDigest, err = ContentHash(ev); err != nil {
			return err
		}
		m.Capabilities[k] = c
	}
	v, err := canonjson.ToValue(m)
	if err != nil {
		return err
	}
	m.Digest, err = ContentHash(v.Without("digest"))
	return err
}

// Counts returns how many capabilities have each status.
func (m *Manifest) Counts() map[Status]int {
	n := map[Status]int{}
	for _, c := range m.Capabilities {
		n[c.Status]++
	}
	return n
}
