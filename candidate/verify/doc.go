// Package verify is the candidate integrity verifier of spec candidate
// §22: [Verify] reads an AgentCandidateBundle's bytes and returns a
// self-digested verification [Record] whose verdict is "verified" or
// "rejected" with issues carrying §22's verdict codes.
//
// It builds on package candidate (strict decoding, both dialects, the
// schema and the digest rule), candidate/gitsafe (repository admission,
// base commit and tree, patch application in a temporary index, safe
// trees, resource blobs) and candidate/netsafe (the address-checking
// resolver client); it re-implements none of their rules.
//
// # Steps performed
//
//   - 1 read: size cap, UTF-8, no byte order mark, strict JSON, an object
//     at the top (parse-error).
//   - 2 dialect: auto (the default), seed or ts16; the record names the
//     dialect used.
//   - 3 schema: every issue with its JSON pointer (schema-invalid).
//   - 4 digest: carried against computed (digest-mismatch).
//   - 5 support policy, with Options.Support ([ReferenceSupport] is the
//     reference runtime's §21.6 policy): knowledge, code kinds, memory
//     modes, profile members and MCP transports the executor cannot
//     honour are unsupported-surface; the other steps still run.
//   - 6 artifacts in §22 order (code.patch.artifact, execution.workspace
//     manifest and archive, knowledge snapshot manifest and archive,
//     retrievalConfig, evaluation, memory.seed): embedded bytes decoded,
//     refs read through an [ArtifactPort]; length first, then sha256;
//     verified bytes cached by (sha256, byteLength) (resolver-blocked,
//     artifact-unavailable, artifact-length, artifact-hash).
//   - 7 workspace snapshots: manifest bytes equal JCS(material) and hash
//     to the digest (workspace-manifest-mismatch); an archive in the
//     reference layout of §21.4 (candidate/wsarchive) decodes strictly,
//     re-encodes to the same bytes, carries repository evidence only in
//     a task workspace and reproduces the manifest's files, modes and
//     bytes (workspace-archive-mismatch); archiveContent says "verified",
//     or "unverified" for an archive in another encoding (checked by
//     length and sha256 only).
//   - 8 resources in §4.2 order: inline and github (repository-mismatch,
//     resource-commit, resource-path, resource-hash).
//   - 9 code: disabled, no-op and git-patch (base-commit-missing,
//     base-tree-mismatch, patch-does-not-apply, candidate-tree-mismatch,
//     unsafe-tree) and materializedTree.
//   - 10 entrypoint evidence from the workspace manifest.
//   - 11 container, with Options.OCI (an [OCIStore]: [Registry] fetches
//     from the image's registry through a netsafe client with anonymous
//     bearer tokens, [OCILayout] reads a local OCI image layout): a
//     pinned container's index read by digest
//     and checked, the manifest for Options.Platform (linux/amd64 by
//     default) selected and checked (container-unavailable,
//     container-digest-mismatch, container-index-invalid,
//     container-platform-missing); an evaluator-owned container is
//     recorded as deferred to the task.
//   - 12 the verification record, self-digested with candidate's rule.
//   - 13 materialization, with Options.Materialize (a
//     [MaterializationContext]: task, suite, run cell, fresh roots, the
//     model grant) for a bundle that verified: the candidate workspace,
//     the profile staging directory and the task workspace are written
//     from the verified bytes and re-scanned against their manifests; the
//     profile plan, activation, memory and execution plan are built
//     (§13, §21.1–21.5) and the AgentCandidateMaterializationReceipt is
//     checked against its schema, self-digested and attached to the
//     record. Nothing is executed. A profile surface the generic
//     materializer cannot reproduce exactly (prompts, token ceilings,
//     tools, permissions, MCP, hooks, modes, subagents, knowledge, a
//     memory seed) is unsupported-surface, never dropped; a context that
//     does not fit the bundle is a *MaterializationError.
//
// Every record also lists, by JSON pointer and rule and never by text,
// the strings that look like credential material (§20.1); they do not
// change the verdict.
//
// # Steps not performed
//
// Steps 5, 11 and 13 run only when their options ask; every record
// lists what it skipped in notPerformed, so a "verified" record never
// claims it.
//
// # Receipts
//
// [VerifyReceipt] is the companion of spec candidate §22.1 for an
// AgentCandidateMaterializationReceipt, an AgentCandidateRunReceipt or a
// CandidateExecutionEvidence: the schema with every cross-field rule;
// every self-digest (receipts, run cell, profile activation) and every
// evidence digest recomputed; every evidence artifact byte-identical to
// its material's canonical JSON; the captured suite and task canonical
// documents of their kinds; every other artifact (trace, executor
// capture, outcome diff or output, grader evidence, memory reset,
// workspace manifests and archives) verified by length then sha256;
// a run receipt bound to its materialization; the within-limits check
// (§12.1) and the router's usageWithinLimits; and, given a bundle or a
// task, the publication rules of §§13.3, 14 and 15.3. Its verdict is
// valid, invalid, limit-exceeded or invalid-capture (§15.4: no closed
// settlement or no complete trace), with issues; NotPerformed lists what
// the inputs did not allow (no materialization, bundle or task; archive
// content; the task outcome's diff replay).
//
// # Ports
//
// [Dir] is a local content-addressed directory (files named by sha256
// hex); [Resolver] fetches s3 and ipfs locators through a netsafe client
// and private-cas from a configured port, else artifact-unavailable;
// [Chain] tries ports in order.
//
// Errors returned by Verify are operational (I/O, git missing, a
// repository not mapped, a resolver unreachable); a command maps them to
// exit status 2, a rejection to 1 and a verified bundle to 0.
//
// The package is layer 1.
package verify
