// Package kb is agentrt's profile knowledge base (KB-01): dated harness and
// model facts, conditional guidance, and reproduced platform learnings, and
// the composer that writes guidance into an AgentProfile's prompt.
//
// # Data
//
// Every entry is built from claims. A [Claim] has text, a [Basis]
// (documented, vendor-guidance, local-observation or hypothesis), an
// [Audience] (agent or operator) and at least one dated [Source]; a
// source's [Authority] describes the source, independently of the claim's
// basis. Each entry derives its prompt, operator and source lists from its
// claims ([Harness.Prompt], [Harness.Operator], [Harness.Sources] and the
// same on [Model]). Hypotheses stay inspectable but contribute no prompt
// or operator text, and only agent-audience text ever enters a profile.
// An empty prompt is legitimate when no supported instruction is needed;
// it is not padded with generic advice. Applicability conditions are kept
// in a claim's text, so composition preserves them.
//
// The data is read through functions that return deep copies
// ([Harnesses], [Models], [Learnings], [Discrepancies], [OperatorNotes],
// [Snapshot]); composition reads a private copy taken at load, so nothing
// a caller does to returned values changes later compositions.
// [Data.Validate] enforces the data rules, and the shipped snapshot is
// validated when the package loads.
//
// Sources guide investigation; they do not prove that a technique improves
// this platform's behavior (KB-02).
//
// # Composition
//
// [WithProfileKB] composes harness guidance, then model guidance, then
// reproduced learnings, then the profile's own text, into
// prompt.appendSystemPrompt where the harness owns an additive
// system-prompt control and into prompt.instructions otherwise. It is built
// on [ComposeGuidance], the composer for any knowledge layer: each block is
// wrapped in a reserved marker,
//
//	<profile-guidance source="S" id="I">
//	TEXT
//	</profile-guidance>
//
// and a composition replaces the earlier blocks of the sources it owns
// ([ComposeOptions].ReplaceSources; all sources when nil) and keeps every
// other block in place. The knowledge base owns "harness", "model" and
// "learning" ([Sources]). A hand-written block with an owned source counts
// as composed and is replaced. Recomposition is stable: a second call, or a
// call for an executor's harness or model override, yields one profile and
// one digest.
//
// # Learnings
//
// A [Learning] is admitted only after an agent-eval check reproduced it (at
// least twice), and its evidence links the evaluation record that keeps
// the run's full scope: requested model and observed served identity,
// provider route and adapter revision, harness and CLI version, authored
// and effective profile digests, reasoning settings, tool, MCP server and
// hook definitions, permissions, loaded skills and instructions (declared
// configuration kept apart from observed delivery), task and acceptance
// check revisions, environment and limits, sampling and budget, outcome,
// errors and traces. Unknown identity, usage or cost stays unknown there; a
// requested model name does not prove which model served a run. The
// evaluation record itself is kept by the evaluation system, not here.
//
// The learning selector matches only harness and model; it does not
// validate any other condition of the run that produced a learning. Keep
// narrower limits explicit in the learning text, or keep the finding in its
// evaluation record until it is suitable for composed guidance. Learning
// records are the single admission surface for measured guidance; claim
// provenance neither revalidates a run nor authorizes an experiment. Before
// reusing a conclusion after a material change, review its applicability
// against the retained evidence, state what still transfers and what needs
// a new check, and run any experiment under the existing registration and
// resource authorization; preserve the original record and append the
// changed scope or new evidence. No learning has been reproduced yet, so
// [Learnings] is empty.
//
// # Source audit (checked 2026-11-29)
//
// Scope of evidence. Vendor guidance is read within its documented, dated
// scope; papers and social posts propose hypotheses to evaluate and do not
// establish universal agent constraints; a measured conclusion applies to
// the configuration, tasks, environment and evidence that supported it
// (KB-27). The shipped data rests only on local observation of installed
// CLIs. Nothing was copied from another knowledge base.
//
// Anthropic and OpenAI. The Claude Code CLI (npm @anthropic-ai/claude-code
// 2.1.197) and the Codex CLI (npm @openai/codex 0.171.0) were installed
// into a scratch directory with a scratch HOME, not logged in, and never
// pointed at a model API. Checked: claude --help; codex --help and codex
// exec --help; codex debug models --bundled (the catalog shipped in the
// binary), which is the only source of the Codex model entries and their
// default efforts; and codex debug prompt-input with -c instructions,
// model_instructions_file and developer_instructions set to a marker, to
// see where each lands in the model-visible prompt. Not checked: vendor
// web documentation, model cards and prompting guides (no network access
// beyond the npm registry), so no claim has basis documented or
// vendor-guidance, and model behavior is not claimed at all. The Claude
// model entry only records that the help names claude-fable-5 as a model
// name.
//
// Open harnesses and model APIs. The opencode CLI (npm opencode-ai
// 1.18.33) was installed the same way. Checked: opencode --help, opencode
// run --help, opencode models --help and opencode agent list with no
// configuration. No model API or router was called, so no router or API
// model entry is shipped; Pi, Kimi Code and the other harnesses of the
// contract were not installed and have no entry.
//
// Distillation and consumer review. No papers, social posts or third-party
// reviews were consulted, so no hypothesis is recorded. Agent-audience
// claims were limited to conditional statements the help output directly
// supports (one for Claude Code, one for Codex, none for opencode), with the
// condition in the text; everything else about launching a harness is an
// operator note. Where the help output disagreed with agentrt's harness
// tables or with itself, the difference is kept in [Discrepancies] rather
// than resolved by assumption.
package kb
