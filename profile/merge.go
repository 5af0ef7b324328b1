package profile

import (
	"maps"
	"slices"
)

// Merge layers overlay over base and returns a new profile (nil when both
// are nil). Overlay fields win only where they are set; removal is the job
// of a Diff's Remove, never of an unset field. Additive fields compose:
// prompt.instructions, resource collections and connections are
// concatenated base first, and appendSystemPrompt values are joined with a
// blank line (an empty side contributes nothing). Records (permissions,
// tools, mcp, subagents, hooks, modes, metadata, extensions) merge per key,
// overlay winning. Everything else, including model and seats, is replaced
// wholesale.
func Merge(base, overlay *Profile) *Profile {
	if base == nil && overlay == nil {
		return nil
	}
	b, o := mustClone(base), mustClone(overlay)
	if b == nil {
		b = &Profile{}
	}
	if o == nil {
		o = &Profile{}
	}
	out := &Profile{
		Name:         pick(o.Name, b.Name),
		Description:  pick(o.Description, b.Description),
		Version:      pick(o.Version, b.Version),
		Tags:         pickSlice(o.Tags, b.Tags),
		Model:        pick(o.Model, b.Model),
		Harness:      b.Harness,
		Seats:        pickSlice(o.Seats, b.Seats),
		Permissions:  mergeMap(b.Permissions, o.Permissions),
		Tools:        mergeMap(b.Tools, o.Tools),
		MCP:          mergeMap(b.MCP, o.MCP),
		Connections:  concat(b.Connections, o.Connections),
		Subagents:    mergeMap(b.Subagents, o.Subagents),
		Hooks:        mergeMap(b.Hooks, o.Hooks),
		Modes:        mergeMap(b.Modes, o.Modes),
		Confidential: pick(o.Confidential, b.Confidential),
		Metadata:     mergeMap(b.Metadata, o.Metadata),
		Extensions:   mergeMap(b.Extensions, o.Extensions),
	}
	if o.Harness != "" {
		out.Harness = o.Harness
	}
	if b.Prompt != nil || o.Prompt != nil {
		bp, op := derefOr(b.Prompt), derefOr(o.Prompt)
		out.Prompt = &Prompt{
			SystemPrompt:       pick(op.SystemPrompt, bp.SystemPrompt),
			AppendSystemPrompt: mergeAppend(bp.AppendSystemPrompt, op.AppendSystemPrompt),
			Instructions:       concat(bp.Instructions, op.Instructions),
		}
	}
	if b.Resources != nil || o.Resources != nil {
		br, or := derefOr(b.Resources), derefOr(o.Resources)
		out.Resources = &Resources{
			Files:        concat(br.Files, or.Files),
			Tools:        concat(br.Tools, or.Tools),
			Skills:       concat(br.Skills, or.Skills),
			Agents:       concat(br.Agents, or.Agents),
			Commands:     concat(br.Commands, or.Commands),
			Instructions: pick(or.Instructions, br.Instructions),
			FailOnError:  pick(or.FailOnError, br.FailOnError),
		}
	}
	return out
}

func mustClone(p *Profile) *Profile {
	if p == nil {
		return nil
	}
	c, err := Clone(p)
	if err != nil {
		// Clone only fails for values no Profile can hold; keep the
		// original rather than lose data.
		return p
	}
	return c
}

func pick[T any](overlay, base *T) *T {
	if overlay != nil {
		return overlay
	}
	return base
}

func pickSlice[T any](overlay, base []T) []T {
	if overlay != nil {
		return overlay
	}
	return base
}

func derefOr[T any](p *T) T {
	if p == nil {
		var zero T
		return zero
	}
	return *p
}

func concat[T any](base, overlay []T) []T {
	if base == nil && overlay == nil {
		return nil
	}
	return append(slices.Clip(append([]T{}, base...)), overlay...)
}

func mergeMap[M ~map[string]V, V any](base, overlay M) M {
	if base == nil && overlay == nil {
		return nil
	}
	out := make(M, len(base)+len(overlay))
	maps.Copy(out, base)
	maps.Copy(out, overlay)
	return out
}

func mergeAppend(base, overlay *string) *string {
	if base == nil || *base == "" {
		if overlay != nil {
			return overlay
		}
		return base
	}
	if overlay == nil || *overlay == "" {
		return base
	}
	s := *base + "\n\n" + *overlay
	return &s
}
