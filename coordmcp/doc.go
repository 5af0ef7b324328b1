// Package coordmcp serves the coordination verbs of a LIVE supervised run
// to an external harness over the Model Context Protocol, and is the
// external-harness manager brain built on that (spec/runtime.md §3.6
// "Brain from profile.harness … claude-code, codex, opencode → an
// external harness drives the coordination verbs", §9 coordination
// tools; checklist OS-04).
//
// Three pieces:
//
//   - [Serve]: the supervising process serves its Coordinator's verbs
//     (through mcpserver, so a refusal is a tool result {error, reason})
//     over streamable HTTP on a loopback port, behind a fresh 256-bit
//     bearer token, and publishes URL and token in the run dir's
//     [EndpointFile] (mode 0600, written atomically). [Server.Close]
//     refuses every later request and removes the file: the token dies
//     with the run. An await_event's event is the harness's only
//     once its call returned it while the call's request was live
//     (supervise.Coordinator.PutBackUnreturned): "written to the client"
//     here means the tool handler returned before the MCP SDK ended the
//     call's context. The SDK ends it when the client cancels the call
//     (notifications/cancelled; the relay sends one for a call its
//     harness cancelled), or at mcpserver's call timeout; it still
//     writes a result returned after that, but a client that cancelled
//     ignores it. (A client that vanishes without a cancel, such as a
//     killed relay, is not seen: its call's event is lost with the
//     harness turn that could have read it.)
//     Such a call fails and its event goes back in its recorded place,
//     and a concurrent await_event waits for it rather than answering
//     idle (the cancel may reach the server after the next call).
//     A cancel that crosses a result already returned still loses it:
//     JSON-RPC has no acknowledgement to wait for.
//     list_questions only reads (a page of the questions asked), and answer_question's decision is
//     the manager's act, visible again in list_questions, so neither
//     needs this.
//   - [Relay] (agentrt mcp coordination RUN-DIR): a stdio MCP server that
//     reads the endpoint file, connects with the token and forwards every
//     tools/call to the live run. A run that is not live fails the relay
//     before it serves ([ErrNotLive]); a run that ends while the relay
//     serves turns each later call into a tool result {error:
//     "run-not-live"}, never a protocol error.
//   - [HarnessBrain]: a supervise.Brain that serves the verbs the manager
//     profile grants, runs one turn of the manager's harness through a
//     contract.Provider (providers/clibridge) with an MCP server entry
//     [MCPServerName] that starts the relay, and returns when the turn
//     ends: the manager answered, called stop (supervise cancels the
//     turn), or ran past a grace after its result was accepted. Its
//     turn is a supervise.DriverTurn: each model call the harness
//     reports while the turn runs (clibridge.CallUsage: opencode's
//     steps; claude-code and codex report usage only at the turn's end)
//     is charged and journaled as it arrives, the turn's final report
//     adds the rest (no iteration: no manager turn counts one), and a
//     supervisor killed mid-turn keeps what was reported (the rest a
//     spend gap on resume, never 0). A resumed run's harness starts a
//     new session that knows nothing of the earlier one, so its prompt
//     then carries a re-entry note built from
//     supervise.Coordinator.Reentry (spec/runtime.md §3.6 resume): the
//     run is in progress, where the journal stands, its workers settled
//     (with outRef and the check's word), running and in doubt, the
//     open questions and the events waiting, and what to do — take the
//     events with await_event and read workers with observe_agent
//     before spawning; spawn_worker with a done worker's key and the
//     same request returns its work. Each list keeps at most
//     supervise.MaxReentryWorkers and says how many it left out, and
//     the note stays within [MaxReentryNoteBytes] (a 1,000-worker run's
//     is some 5 KB). A first start's prompt has no note.
//
// Root steers (§3.6 "Steering": a steer whose worker is the run id, from
// `agentrt steer RUN RUN-ID` or the run dir) reach the harness's manager
// without interrupting its model call: HarnessBrain reads the manager
// inbox (supervise.InboxReader), and the result of the harness's next
// coordination tool call carries the waiting steers' messages as
// [SteersMember] ("steers", at most [MaxResultSteerBytes] per result, the
// rest with the next one) — a result's JSON text is what claude-code,
// codex and opencode show their model. A steer that arrives while the
// manager waits in await_event ends that wait (supervise.Inbox.Waiting):
// await_event answers at once with what it has — pending, idle or an
// event — and the steer. An await_event in flight when the run starts
// settling (the harness's own stop beside it, agentrt cancel RUN-DIR,
// the deadline) answers at once too: {stopped: true, reason, live}. A steer is acknowledged delivered when a result
// about to be sent takes it (a refused call's {error, reason} carries
// none); when the harness's turn ends the inbox is sealed, so a steer it
// never saw is not_live, never delivered. This is verified with a
// stand-in harness that calls the verbs through the real relay process
// (steer_test.go), not yet with the real CLIs.
//
// Product tools (§3.6 resolveSupervisorTools): when the run has
// supervise.Options.ResolveSupervisorTools, HarnessBrain resolves the
// root manager's own tools once (supervise.Coordinator.NodeTools) and
// serves them on the same endpoint beside the granted verbs, so the
// relay lists and forwards them as it does the verbs; the prompt names
// them. Each call is journaled before and after it runs, and its context
// ends when the manager's does, not only when its request does; a call
// over MCP carries no model call id, so every call runs (a resumed
// run's harness is a new session that makes calls of its own). A
// resolver that fails ends the run driver-failed before the harness
// starts. An external harness drives only the root (ErrNestedHarness),
// so a nested manager's product tools are its router brain's.
// Verified with the stand-in harness through the real relay
// (nodetools_test.go).
//
// HarnessBrain is verified end to end with the real claude-code
// (2.1.197), codex (0.171.0) and opencode (1.18.33) binaries against
// local scripted model endpoints: each calls the relayed verbs as its
// own MCP tools (mcp__agentrt__<tool>, namespace mcp__agentrt, and
// agentrt_<tool>).
//
// The token is a secret: it is in the 0600 file and in memory only, never
// in an argv, a profile, a log, an event or a receipt (the harness's MCP
// entry carries the run dir, and the relay reads the token itself).
package coordmcp
