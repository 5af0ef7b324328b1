package contract_test

import (
	"strings"
	"testing"

	"github.com/agentrt/agentrt/contract"
)

var (
	envD1 = "sha256:" + strings.Repeat("1", 64)
	envD2 = "sha256:" + strings.Repeat("2", 64)
	envD3 = "sha256:" + strings.Repeat("3", 64)
	envD4 = "sha256:" + strings.Repeat("4", 64)
	envD5 = "sha256:" + strings.Repeat("5", 64)
	envD6 = "sha256:" + strings.Repeat("6", 64)
)

// envSnapshotJSON is a valid workspace snapshot reference (seed 004 shape).
var envSnapshotJSON = `{"kind":"agent-candidate-workspace-snapshot","digest":"` + envD1 + `",
	"manifest":{"locator":{"kind":"s3","bucket":"workspace-artifacts","key":"snapshots/manifest.json","region":"us-east-1"},"sha256":"` + envD1 + `","byteLength":512},
	"archive":{"locator":{"kind":"private-cas","namespace":"tangle-workspaces","digest":"` + envD2 + `"},"sha256":"` + envD2 + `","byteLength":4096},
	"source":{"leaseId":"lease-1","leaseRecordDigest":"` + envD3 + `",
		"workspace":{"provider":"tangle","root":"/workspaces/lease-1","identityDigest":"` + envD4 + `"},
		"sourceSnapshotDigest":"` + envD5 + `",
		"sourceSnapshotPolicy":{"kind":"provider-declared","name":"tangle-git-snapshot","version":1,"digest":"` + envD6 + `"}}}`

// envCheckpointJSON is a valid workspace checkpoint reference.
const envCheckpointJSON = `{"checkpointId":"checkpoint-1","provider":"provider-a","source":{"runId":"run-source","provider":"provider-a",
	"environmentId":"environment-source","sessionId":"session-source","executionId":"execution-source",
	"requestDigest":"sha256:aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"},"idempotencyKey":"checkpoint-operation",
	"requestDigest":"sha256:44a4232f035f29adfaeb767c286a19d2410f4f0595c000bf43dca409627a9d34","createdAt":"2026-08-01T20:00:00.000Z"}`

func TestWorkspaceSnapshotRef(t *testing.T) {
	// WSP-13..WSP-16: the closed, strict snapshot shape.
	snap, err := contract.ParseWorkspaceSnapshotRef([]byte(envSnapshotJSON))
	if err != nil {
		t.Fatal(err)
	}
	if snap.Archive.Locator.Kind != contract.LocatorPrivateCAS || *snap.Archive.Locator.Namespace != "tangle-workspaces" ||
		snap.Source.SourceSnapshotPolicy.Version != 1 {
		t.Fatalf("decoded %+v", snap)
	}
	ipfs := envMutate(t, envSnapshotJSON, func(m map[string]any) {
		envObj(m, "manifest")["locator"] = map[string]any{"kind": "ipfs", "cid": "b" + strings.Repeat("a", 40), "path": "snap/manifest.json"}
	})
	if _, err := contract.ParseWorkspaceSnapshotRef(ipfs); err != nil {
		t.Fatalf("an IPFS locator is refused: %v", err)
	}
	for _, tc := range []struct {
		name, id string
		mutate   func(m map[string]any)
		path     string
	}{
		{"another kind", "WSP-13", func(m map[string]any) { m["kind"] = "agent-candidate-workspace" }, "/kind"},
		{"extra root member", "WSP-13", func(m map[string]any) { m["files"] = []any{} }, ""},
		{"extra artifact member", "WSP-13", func(m map[string]any) { envObj(m, "archive")["url"] = "https://x" }, "/archive"},
		{"inline bytes", "WSP-16", func(m map[string]any) { envObj(m, "archive")["content"] = "AAAA" }, "/archive"},
		{"negative byte length", "WSP-13", func(m map[string]any) { envObj(m, "manifest")["byteLength"] = -1 }, "/manifest/byteLength"},
		{"fractional byte length", "WSP-13", func(m map[string]any) { envObj(m, "manifest")["byteLength"] = 1.5 }, "/manifest/byteLength"},
		{"uppercase digest", "WSP-13", func(m map[string]any) { m["digest"] = strings.ToUpper(envD1) }, "/digest"},
		{"http locator", "WSP-14", func(m map[string]any) {
			envObj(m, "manifest")["locator"] = map[string]any{"kind": "http", "url": "https://x/y"}
		}, "/manifest/locator/kind"},
		{"file locator", "WSP-14", func(m map[string]any) {
			envObj(m, "manifest")["locator"] = map[string]any{"kind": "file", "path": "/tmp/x"}
		}, "/manifest/locator/kind"},
		{"extra locator member", "WSP-14", func(m map[string]any) { envObj(m, "manifest.locator")["endpoint"] = "https://x" }, "/manifest/locator"},
		{"private-cas without digest", "WSP-14", func(m map[string]any) { delete(envObj(m, "archive.locator"), "digest") }, "/archive/locator/digest"},
		{"bucket looks like an IP", "WSP-14", func(m map[string]any) { envObj(m, "manifest.locator")["bucket"] = "10.0.0.1" }, "/manifest/locator/bucket"},
		{"bucket uppercase", "WSP-14", func(m map[string]any) { envObj(m, "manifest.locator")["bucket"] = "Bucket" }, "/manifest/locator/bucket"},
		{"absolute key", "WSP-14", func(m map[string]any) { envObj(m, "manifest.locator")["key"] = "/etc/passwd" }, "/manifest/locator/key"},
		{"escaping key", "WSP-14", func(m map[string]any) { envObj(m, "manifest.locator")["key"] = "a/../b" }, "/manifest/locator/key"},
		{"bad region", "WSP-14", func(m map[string]any) { envObj(m, "manifest.locator")["region"] = "mars" }, "/manifest/locator/region"},
		{"bad cid", "WSP-14", func(m map[string]any) {
			envObj(m, "manifest")["locator"] = map[string]any{"kind": "ipfs", "cid": "Qm123"}
		}, "/manifest/locator/cid"},
		{"missing leaseId", "WSP-15", func(m map[string]any) { delete(envObj(m, "source"), "leaseId") }, "/source/leaseId"},
		{"missing leaseRecordDigest", "WSP-15", func(m map[string]any) { delete(envObj(m, "source"), "leaseRecordDigest") }, "/source/leaseRecordDigest"},
		{"missing workspace root", "WSP-15", func(m map[string]any) { delete(envObj(m, "source.workspace"), "root") }, "/source/workspace/root"},
		{"missing identityDigest", "WSP-15", func(m map[string]any) { delete(envObj(m, "source.workspace"), "identityDigest") }, "/source/workspace/identityDigest"},
		{"missing sourceSnapshotDigest", "WSP-15", func(m map[string]any) { delete(envObj(m, "source"), "sourceSnapshotDigest") }, "/source/sourceSnapshotDigest"},
		{"policy of another kind", "WSP-15", func(m map[string]any) { envObj(m, "source.sourceSnapshotPolicy")["kind"] = "shared" }, "/source/sourceSnapshotPolicy/kind"},
		{"policy version zero", "WSP-15", func(m map[string]any) { envObj(m, "source.sourceSnapshotPolicy")["version"] = 0 }, "/source/sourceSnapshotPolicy/version"},
		{"blank lease id", "WSP-15", func(m map[string]any) { envObj(m, "source")["leaseId"] = "   " }, "/source/leaseId"},
		{"credential-looking provider", "WSP-27", func(m map[string]any) {
			envObj(m, "source.workspace")["provider"] = "sk-ant-api03-" + strings.Repeat("a", 40)
		}, "/source/workspace/provider"},
	} {
		t.Run(tc.id+" "+tc.name, func(t *testing.T) {
			_, err := contract.ParseWorkspaceSnapshotRef(envMutate(t, envSnapshotJSON, tc.mutate))
			envWantIssue(t, err, tc.path)
		})
	}
}

func TestWorkspaceRequest(t *testing.T) {
	ok := []struct{ name, doc string }{
		// WSP-12, WSP-19, WSP-28: a snapshot with a repository cwd, no
		// provider-native checkpoint involved.
		{"snapshot with repository cwd", `{"snapshot":` + envSnapshotJSON + `,"cwd":{"base":"repository","path":"./src//app/."}}`},
		// WSP-31: a provider-native checkpoint.
		{"checkpoint", `{"checkpoint":` + envCheckpointJSON + `,"cwd":{"base":"host","path":"/srv/work"}}`},
		// WSP-29: the repository fields.
		{"repository", `{"environment":"universal","repoUrl":"https://example.com/r.git","gitRef":"main","providerOptions":{"depth":1}}`},
		{"image", `{"image":"ghcr.io/acme/img@sha256:` + strings.Repeat("a", 64) + `"}`},
		{"empty", `{}`},
	}
	for _, tc := range ok {
		t.Run(tc.name, func(t *testing.T) {
			w, err := contract.ParseWorkspaceRequest([]byte(tc.doc))
			if err != nil {
				t.Fatal(err)
			}
			if w.Cwd != nil && w.Cwd.Base == contract.CwdRepository && w.Cwd.Path != "src/app" {
				t.Fatalf("WSP-06: cwd not canonicalized: %q", w.Cwd.Path)
			}
		})
	}
	bad := []struct {
		name, id, doc, path string
	}{
		{"snapshot with repoUrl", "WSP-18", `{"snapshot":` + envSnapshotJSON + `,"repoUrl":"https://example.com/r.git"}`, "/snapshot"},
		{"snapshot with gitRef", "WSP-18", `{"snapshot":` + envSnapshotJSON + `,"gitRef":"main"}`, "/snapshot"},
		{"snapshot with checkpoint", "WSP-18", `{"snapshot":` + envSnapshotJSON + `,"checkpoint":` + envCheckpointJSON + `}`, "/snapshot"},
		{"snapshot with host cwd", "WSP-19", `{"snapshot":` + envSnapshotJSON + `,"cwd":{"base":"host","path":"/srv"}}`, "/cwd"},
		{"checkpoint with repoUrl", "WSP-20", `{"checkpoint":` + envCheckpointJSON + `,"repoUrl":"https://example.com/r.git"}`, "/checkpoint"},
		{"environment and image", "WSP-29", `{"environment":"universal","image":"img"}`, "/image"},
		{"gitRef without repoUrl", "WSP-29", `{"gitRef":"main"}`, "/gitRef"},
		{"unknown member", "WSP-29", `{"branch":"main"}`, ""},
		{"string cwd", "WSP-01", `{"cwd":"src"}`, "/cwd"},
		{"padded gitRef", "WSP-29", `{"repoUrl":"r","gitRef":" main"}`, "/gitRef"},
		{"empty repoUrl", "WSP-29", `{"repoUrl":""}`, "/repoUrl"},
		{"providerOptions not an object", "WSP-29", `{"providerOptions":[1]}`, "/providerOptions"},
		{"oversized providerOptions", "WSP-29", `{"providerOptions":{"x":"` + strings.Repeat("a", contract.MaxStringLength+1) + `"}}`, "/providerOptions"},
		{"checkpoint extra member", "WSP-30", `{"checkpoint":` + strings.Replace(envCheckpointJSON, `"checkpointId"`, `"x":1,"checkpointId"`, 1) + `}`, "/checkpoint"},
		{"checkpoint offset createdAt", "WSP-30", `{"checkpoint":` + strings.Replace(envCheckpointJSON, `.000Z`, `+01:00`, 1) + `}`, "/checkpoint/createdAt"},
		{"bad snapshot inside", "WSP-13", `{"snapshot":{"kind":"agent-candidate-workspace-snapshot"}}`, "/snapshot/digest"},
	}
	for _, tc := range bad {
		t.Run(tc.id+" "+tc.name, func(t *testing.T) {
			_, err := contract.ParseWorkspaceRequest([]byte(tc.doc))
			envWantIssue(t, err, tc.path)
		})
	}
}

func TestResourceRequest(t *testing.T) {
	// ENV-17: ResourceRequest is strict.
	r, err := contract.ParseResourceRequest([]byte(`{"cpu":0.5,"memoryMb":2048,"diskMb":10240,"gpu":"a100","providerOptions":{"tier":"spot"}}`))
	if err != nil {
		t.Fatal(err)
	}
	if *r.CPU != 0.5 || *r.MemoryMB != 2048 || *r.GPU != "a100" {
		t.Fatalf("%+v", r)
	}
	for _, tc := range []struct{ doc, path string }{
		{`{"cpu":0}`, "/cpu"},
		{`{"memoryMb":1.5}`, "/memoryMb"},
		{`{"diskMb":-1}`, "/diskMb"},
		{`{"gpu":""}`, "/gpu"},
		{`{"ram":1}`, ""},
	} {
		_, err := contract.ParseResourceRequest([]byte(tc.doc))
		envWantIssue(t, err, tc.path)
	}
}
