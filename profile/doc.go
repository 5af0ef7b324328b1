// Package profile owns AgentProfile: the complete behavioral declaration of
// an agent (harness, provider and model, prompt, tools, MCP servers,
// permissions, resources, hooks, subagents, modes, seats), its strict
// validation, and its identity.
//
// A profile's identity is [Digest]: sha256 over the RFC 8785 canonical JSON
// of the validated profile, byte for byte the reference TypeScript
// implementation's canonicalAgentProfileDigest. A profile parsed from JSON
// and the same profile built in Go have one digest, because presence round
// trips: nil pointers, maps and slices are absent, while "", false, 0, {}
// and [] are kept.
//
// Beyond shape, the package owns the rules the seeds attach to a profile:
// seat chains and the per-segment provider-facing [Project]ion, [Measure],
// [Merge], [Diff] and [ApplyDiff], and the security predicates
// ([IsRuntimeProcessControlEnvironmentName],
// [IsCredentialBearingProfileConfigName], [LooksLikeCredential],
// [ValidateSecurity]).
//
// It must not import the runtime, stores or providers: it is contract,
// layer 1, and depends only on canonjson, schema and harness.
package profile
