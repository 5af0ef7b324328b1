package scripted_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/contract"
	"github.com/agentrt/agentrt/providers/scripted"
)

// WSP-26: an adapter without snapshot (or repository, or checkpoint)
// support refuses the workspace input before any effect — no environment
// is provisioned, none is listed, no turn is dispatched — with
// contract.ErrUnsupported and the member's JSON pointer in the message.
func TestCreateRefusesUnappliedWorkspaceBeforeAnyEffect(t *testing.T) {
	key := "k-1"
	for _, c := range []struct {
		pointer string
		ws      contract.WorkspaceRequest
	}{
		{"/workspace/snapshot", contract.WorkspaceRequest{Snapshot: &contract.WorkspaceSnapshotRef{Kind: "agent-candidate-workspace-snapshot"}}},
		{"/workspace/repoUrl", contract.WorkspaceRequest{RepoURL: ptr("https://example.com/repo.git")}},
		{"/workspace/gitRef", contract.WorkspaceRequest{RepoURL: ptr("https://example.com/repo.git"), GitRef: ptr("main")}},
		{"/workspace/checkpoint", contract.WorkspaceRequest{Checkpoint: &contract.WorkspaceCheckpointRef{CheckpointID: "cp-1", Provider: "scripted"}}},
		{"/workspace/environment", contract.WorkspaceRequest{Environment: ptr("universal")}},
		{"/workspace/image", contract.WorkspaceRequest{Image: ptr("ubuntu:24.04")}},
		{"/workspace/providerOptions", contract.WorkspaceRequest{ProviderOptions: map[string]canonjson.Value{"x": canonjson.BoolValue(true)}}},
	} {
		for _, keyed := range []bool{false, true} {
			name := c.pointer
			if keyed {
				name += "/keyed"
			}
			t.Run(name, func(t *testing.T) {
				p := scripted.New(hello(), scripted.Options{})
				ws := c.ws
				in := &contract.CreateInput{Workspace: &ws}
				if keyed {
					in.IdempotencyKey = &key
				}
				env, err := p.Create(t.Context(), in)
				if !errors.Is(err, contract.ErrUnsupported) {
					t.Fatalf("err %v, want contract.ErrUnsupported", err)
				}
				if env != nil {
					t.Error("an environment came back with the refusal")
				}
				if !strings.Contains(err.Error(), c.pointer+" ") {
					t.Errorf("err %q does not name %s", err, c.pointer)
				}
				if p.Creates() != 0 || p.Turns() != 0 {
					t.Errorf("%d creates and %d turns after the refusal; want none", p.Creates(), p.Turns())
				}
				if list, err := p.List(t.Context(), nil); err != nil || len(list) != 0 {
					t.Errorf("environments listed after the refusal: %v, %v", list, err)
				}
			})
		}
	}
}

// The only workspace member the provider applies, a repository-based
// cwd, is still accepted.
func TestCreateAcceptsRepositoryCwd(t *testing.T) {
	p := scripted.New(hello(), scripted.Options{})
	in := &contract.CreateInput{Workspace: &contract.WorkspaceRequest{Cwd: &contract.WorkspaceCwd{Base: contract.CwdRepository, Path: "src"}}}
	if _, err := p.Create(t.Context(), in); err != nil {
		t.Fatal(err)
	}
	if p.Creates() != 1 {
		t.Errorf("%d creates, want 1", p.Creates())
	}
}
