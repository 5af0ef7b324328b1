// Package candidate owns the frozen improvement candidate contract: the
// AgentCandidateBundle and every record that plans, materializes, runs and
// settles one (benchmark task and suite, profile and execution plans,
// profile activation, model settlement, task outcome, benchmark result,
// materialization and run receipts, execution evidence), plus the
// execution preparation receipt, the workspace lease record and certified
// context that share its digest machinery.
//
// It also owns the improvement records of runtime §3.9: a profile change
// ([ProfileChangeSchema], [ChangedSurfaces]), a profile run receipt, the
// profile and bundle measured comparisons whose summaries are recomputed
// from their signed receipts (measurement.go holds those rules once), and
// the production path's proposal, review, activation and activation
// result. Their verdicts follow the reference 1.6.0 build, whose vectors
// bind them; none of them activates anything.
//
// Each wire kind has a Go type whose presence round-trips (nil pointers,
// maps and slices are absent; "", false and 0 are kept), a schema value
// built with package schema (strict objects, JSON-pointer issues, one
// error type, *schema.Error), a Parse function, and a registration in
// [Kinds] so `agentrt check --kind` reads it. Validation reuses profile's
// rules for the candidate profile (prompt, permissions, subagents, modes,
// model hints and token ceilings, safe executables and paths, credential
// heuristics) and contract's for limits and fixed spend.
//
// # Digests
//
// Every identity is "sha256:" and the hex SHA-256 of RFC 8785 canonical
// JSON ([ContentDigest], CAND §2.1; CND-27). Self-digested documents drop
// only their top-level "digest" member ([SelfDigest], [Digest] for
// bundles); evidence records hash their material ([EvidenceDigest]) and
// carry its canonical bytes ([MaterialBytes]); certified context hashes a
// named subset ([CertifiedContextEntryHash], [CertifiedContextHash]).
// Parsing proves the shape only (CND-26): a bundle's carried digest is
// compared by [VerifyDigest]. Preparation receipts and lease records
// verify their own digest in the schema, as the reference does.
//
// # Dialects (CAND §0.1, decision §25.1)
//
// The seeds describe a bundle whose disabled code carries a reason
// ("control" or "not-applicable") and which carries its lineage (ancestry
// and spend); the reference 1.6.0 build (the vectors, dialect "ts16")
// rejects both. Both are implemented: [DialectAuto], the default, reads a
// bundle with a top-level lineage in [DialectSeed] and any other in
// [DialectTS16]; a document is valid in at most one. Standalone kinds
// (AgentCandidateCode, …) are read in ts16, whose vectors bind. The
// digest algorithm is the same in both.
//
// # Rules decided here
//
//   - Duplicate JSON member names are refused (decision §25.2).
//   - SPDX licence expressions follow spdx-expression-parse 5.0.0's
//     grammar over the SPDX list data in spdx.go (CND-18).
//   - Provenance identities are trimmed exactly as the reference trims
//     them and the trimmed value is hashed (§2.3, decision §25.3).
//   - Artifact locators are the reference's s3 and ipfs; a seed-dialect
//     bundle's memory seed may also use seed 004's private-cas locator,
//     whose digest must equal the ref's sha256 (CAND §3.1, V34p).
//   - Execution preparation axes add one axis per model token ceiling,
//     following the seed text (MAT-01, decision §25.5).
//   - The materialization receipt compares plan bindings structurally
//     where the reference compares JSON.stringify output (§14).
//
// # Open items
//
//   - The integrity verifier (spec §22) is package candidate/verify, over
//     candidate/gitsafe and candidate/netsafe; materialization is not
//     implemented yet.
//
// The package is layer 1: it imports canonjson, schema, harness, profile,
// contract and internal/whatwgurl (WHATWG host normalization for the
// private-host test), never the runtime, stores or providers.
package candidate
