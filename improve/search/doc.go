// Package search is the search-and-measure side of the improvement front
// door (runtime §3.9, RTP-12): [Improve] hands a frozen surface of a base
// profile to a search [Method], materializes every candidate the method
// asks about as a complete, validated, digested profile, runs it through
// an [Agent] (the kernel, [KernelAgent]) on scenarios and scores it with
// the caller's [Judge]s; then it re-measures the baseline and the selected
// candidate itself on the untouched test partition, and decides ship or
// hold from a paired bootstrap interval and the accounted spend.
//
// The surfaces (runtime §3.9) are the profile's prompt, skills
// (resources.skills, or one named inline skill's content with
// Options.Skills), memory (resources.instructions), tools, mcp, hooks,
// subagents and the whole agent-profile, each replaced in a copy of the
// base at its JSON pointer; a named component the caller reads and
// applies itself (Options.ProfileComponents, checked by re-reading and by
// applying the base's component back); and code (Options.Code), where a
// candidate is a git patch against a pinned commit run in its own linked
// git worktree. [Surface.ActivationSurface] names the activation surface
// each maps to.
//
// It owns these rules: the base profile is never mutated; a method sees
// the selected surface and train and selection cases (by default their
// ids only), never a test case; recognised credentials in a candidate
// surface are refused ([CredentialError]); a profile that would run
// commands (a local MCP server, a hook, a code patch), the baseline
// included, runs only
// when Options.AuthorizeSensitiveCandidate authorizes it, asked once per
// distinct profile ([SensitiveCandidateError]); ship only when the interval's
// lower bound clears MinimumLift and every cost is known, any unknown
// cost holds, and a reported total above CostCeiling is refused
// ([CostCeilingError]); a run directory's journal (package journal)
// lets a run with the same recipe identity resume without measuring a
// case twice (Resume if-compatible moves a journal of another identity
// aside and starts fresh; required refuses it). [Greedy] is the built-in
// method; optimizers such as GEPA plug in as another [Method].
//
// Privacy: the caller may describe train and selection cases and search
// outputs to the method (Options.DescribeScenario, DescribeArtifact);
// every descriptor passes the caller's Redact and then [Scrub] (the
// credential rule of candidate.ScanSecrets, and email addresses), and a
// failing hook fails the run closed ([DescriptorError]).
// Options.ValidateCandidate may refuse a candidate before it runs
// ([ValidationError]). Training mode ([ModeTraining]) hands the method
// byte-pinned datasets for a separate training executor and refuses the
// final measurement when a test case appears in a training receipt
// ([HeldOutError]).
//
// It must not activate anything and must not import package improve:
// search and activation stay detached (RTP-04, RTP-13). The result's
// [Result.Proposal] is an input the production path may take.
package search
