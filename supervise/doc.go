// Package supervise coordinates a tree of workers under one conserved
// budget (spec/runtime.md §3.6).
//
// Supervise runs a manager agent: its Brain — for harness cli-base the
// RouterBrain, an in-process kernel tool loop of the manager's profile
// whose tools are the coordination verbs it declares (ToolPrefix +
// verb); otherwise a Brain the caller supplies — drives a Coordinator:
// spawn_worker, await_event, observe_agent, steer_agent, submit_result,
// stop, read_journal, ask_parent, list_questions, answer_question,
// list_analysts, run_analyst and define_analyst. Awaiting again is
// waiting, not a loop: the router brain's repeated identical await_event
// calls stop it as stuck only when their outcomes repeat too
// (kernel.ToolLoopOptions.Waiting).
// Refusals are tool results {error, reason}; a spawn_worker refusal also
// carries cause, live and freeSlots, a budget-exhausted one a shortfall
// {channel, requested, free} (tokens, iterations, usd in dollars as
// maxUsd is, resource:<name>; closedByUnknownSpend when unreported
// dollars closed the channel) and a reason naming the budget field and
// the largest request that fits, and a usd-unbudgeted one a hint that
// no smaller maxUsd is admitted. Workers run through the
// Executor port (KernelExecutor runs a worker profile through
// kernel.Execute on any contract.Provider); each is reserved from the
// Scope before it runs and settled with what it really spent, and is
// delivered only when the caller's Deliverable check passed; a check
// that errs, panics or outlives its timeout delivers nothing, its
// verdict not passed with the reason and WorkerSummary.CheckError (or a
// submit_result's verdict) saying why (§15 behaviour 41:
// TestOutsideThrowingCheck). Every state
// change is appended to the run dir's spawn journal (package journal)
// before it is visible; a run started again on the same dir with Resume
// replays settled workers instead of executing them, charges workers
// left unsettled at their ceilings, and keeps the original start and
// deadline: resumed before the deadline a run has what was left of it
// (read on Options.Now), and resumed after it the journal is replayed
// (its spawns re-admitted, ledger.Pool.Readmit) and the run ends at once,
// no-winner budget-exhausted, with no brain driven, no worker run and
// nothing more spent. The result is a SupervisedResult arm: winner, or no-winner
// with a reason. A run no lifecycle cause ended has its winner chosen by
// Options.Finalizer among its candidates (the root's delivered children,
// the manager's submitted result; DefaultFinalizer takes the submitted
// result, else the highest score): a choice of no candidate is no-winner
// all-children-down (FinalizerNote says why), a finalizer that fails,
// panics or outlives FinalizerTimeout is driver-failed (*FinalizerError).
// The run's finished record journals that whole result
// (OutcomeRecord) before Supervise returns it, so with
// Options.ReturnEnded a run resumed after its end — its process killed
// before its caller recorded the result — returns the same result
// without driving the brain or running a worker. A run its caller's
// context cancelled (the Go form of the reference's caller abort
// signal: no-winner aborted, Cancellation.Source CancelSourceContext;
// the host stopped, a claim was lost) was interrupted, not ended: its
// finished record is kept, and a resume drives it on. Without ReturnEnded a resume always drives the
// brain again over the replayed journal, as the reference does (its
// drivers are replay-safe).
//
// A router manager's conversation (RouterBrain, and a nested manager's
// under its node) is journaled with the run, in the same journal and
// under the same fence as its spawns: each consistent piece of its tool
// loop's transcript (kernel.ToolLoopOptions.Checkpoint: a turn's
// assistant message before its calls run, each call's result, the
// steers a turn sees, the answer) is one KindTranscript record of
// deltas, a message over 16 KiB in a content-addressed blob as a
// settlement's outRef. A manager whose record cannot be journaled
// stops rather than run ahead of it. A resumed Drive feeds the journaled
// transcript back (kernel.ToolLoopOptions.Recorded, after the system
// prompt and the task, which is not added again): the manager goes on
// from where it was — a model words things differently the second time,
// so starting over would run committed work again — and a call it made
// whose result was not journaled runs again exactly as made, so a spawn
// replays its journaled child. Recorded turns are not asked again, and
// their spend is charged once: a model turn's spend rides on the
// transcript record that journals what the turn said (Record.Spent), so
// a resumed run has both or neither — a turn cut before that record
// landed is asked again and charged once, as a turn cut mid-answer
// always was; the settlements its await_event
// calls already returned (TranscriptMessage.Took) are not queued again,
// nor the root steers its user messages hold (Took, TakenSteer).
// A journal without transcript records (written before them, or by a
// caller's brain) resumes with a fresh conversation, as before. A brain
// that cannot replay its conversation (an external harness's new
// session, coordmcp.HarnessBrain) reads Coordinator.Reentry instead:
// whether its manager re-enters a run in progress, the journal's
// position, its workers settled, running and in doubt, its open
// questions and the events waiting — each list bounded
// (MaxReentryWorkers, MaxReentryQuestions, texts clipped to
// MaxReentryText) with the count left out.
//
// A call run again so must act at most once. What each verb's re-run
// does, its first run's effect journaled or not:
//
//	spawn_worker     replays the journaled child (same arguments): the
//	                 child is not executed again — nor spawned again
//	                 when it is in doubt with its execution bound (it
//	                 may still run): the call, by its id, gets that
//	                 child back, its answer inDoubt (no resumed: the
//	                 child is neither completed nor live). One in doubt
//	                 that bound no execution runs anew
//	await_event      takes the next queued event: the one the lost
//	                 result held was never dropped (Took is journaled
//	                 with the result), so it is returned now, once. An
//	                 event is taken only when the call's result is
//	                 journaled: one an await took whose result the loop
//	                 did not record (its context ended first) goes back
//	                 to the queue, in its place, for the next await
//	observe_agent, read_journal, list_questions, list_analysts
//	                 read only
//	steer_agent      keyed by its call (kernel.ToolCallID: operation
//	                 "steer_agent-" + digest of run, manager node and
//	                 call id): to a worker, the journaled outcome of the
//	                 first run (replayed), unknown — never sent again —
//	                 when only its request was journaled; to the root
//	                 or a nested manager driven again, not sent again:
//	                 the journaled outcome, or unknown while the resumed
//	                 run's re-offer of it is open — the re-offer, not
//	                 the call, journals its acknowledgement
//	submit_result    the very result journaled (KindSubmitted) is
//	                 accepted, replayed; another is refused
//	                 earlier-passing-result; a nested manager's is
//	                 journaled so too, under its node (Record.Node), so
//	                 driven again it settles with exactly that result
//	stop             stops again (not journaled; the run ended with its
//	                 process)
//	ask_parent       asks again: the first ask is listed expired with
//	                 its process, so one question is open (a nested
//	                 manager's ask whose result was journaled is not
//	                 run again: its question is open again, see
//	                 Questions); the root's call whose escalation was
//	                 journaled answers that outcome, replayed, and
//	                 neither asks nor calls EscalateQuestion again
//	answer_question  a decision an earlier process delivered, given
//	                 again, is answered delivered, replayed, and not
//	                 sent; another is refused already-decided; one that
//	                 was not delivered expired with its asker
//	define_analyst   the same definition an earlier process journaled is
//	                 answered defined, replayed; another is refused
//	                 duplicate-analyst
//	run_analyst      keyed by lens and worker (the analyst's spawn
//	                 key): a completed analysis returns its findings
//	                 (resumed: completed) and runs nothing; the key's
//	                 other states answer as any keyed spawn's do
//
// read_journal leaves transcript records out unless asked for their
// kind.
//
// In-doubt recovery (§3.6 "in-flight keyed work is in-doubt until
// recovered"). An executor names the exact execution it is about to
// start through Work.Bind (KernelExecutor: its kernel run id), which
// journals an execution-bound record before the execution exists. A
// resumed run finds each worker whose spawn has such a record and no
// settlement, and — after OnResume, before the settlement hooks and
// the brain, all within Options.RecoverTimeout — asks an executor that
// is a Recoverer for that execution's outcome (KernelExecutor.Recover reads
// the kernel runs in its Store; it never starts replacement work). An
// execution that ended settles the worker as if it had just ended —
// its reservation replaced by its real spend, its result checked,
// journaled (Record.Recovered) and queued for Await — so its key
// replays it as completed. One still running, interrupted, missing or
// unreadable, or an executor that cannot recover, leaves the worker in
// doubt, charged at its ceiling, its key refused in-doubt, with a
// recovery-failed record and the reason (observe_agent's reason,
// WorkerSummary.InDoubtReason); the operator's way out is to resume
// the run again once the execution ended (agentrt supervise --resume).
// A manager that only awaits learns it too: await_event's idle, pending
// and stopped answers name its workers in doubt (AwaitResult.InDoubt).
// A kernel run found interrupted because its holder's lease lapsed with
// no end recorded (the supervisor was killed mid-turn) is closed by
// KernelExecutor.Recover as its judge (kernel.CloseAbandoned: recorded
// interrupted, reason abandoned, naming the run and node), so the store
// no longer holds it as live work of nobody; one whose lease still holds
// is left to its holder.
//
// observe_agent (ObservePage) reports a worker's progress — idleMs,
// stalled (running and idle Options.StallAfter or more, the package's
// StallAfter when it is 0; every manager's reading, and the
// StopRule's, judges by the same threshold), stallAfterMs (that
// threshold), turns, recentActivity,
// profileChanges, steerable, pendingMessages, unknown where this
// process could not see the worker — and pages its settled output:
// outputPath (a JSON pointer into {text, output}), offset and limit
// choose at most MaxObservePage bytes, cut on character boundaries,
// with outputBytes and nextOffset; steer_agent's reply carries the same
// progress. RunDirTail follows a run dir's journal from another process
// reading only what was appended since its last look; StreamTail
// (TailWorkerLog, TailRootStream) follows a worker log or the root
// stream the same way.
//
// What a resume keeps (P7 and §6 "restart never mints capacity", §3.6
// "Persistence & resume"). The run-started record journals the run's
// task, its Budget as given, its PerWorker default and its manager
// profile's digest (profile.Digest). A resume runs with those: a budget
// channel, a per-worker channel or a task the caller left out (nil,
// empty) is adopted from the journal — a zero Budget and an empty task
// resume the run as it started — and one the caller gave must equal the
// journaled one, as must the manager profile, else Supervise refuses
// before anything runs with a *ResumeError wrapping a
// *ResumeMismatchError that names the option, the record's JSON
// pointer, and both values. The deliverable check is held the same way
// when it is named: the digest of Deliverable.Identity is journaled,
// and a resume naming another rule is refused (the run's earlier
// settlements were judged by the first; a check is code, so it cannot
// be adopted from the journal, and an unnamed one is not compared). A journal written before these were
// journaled resumes with the caller's Budget and PerWorker (then
// required) and an unchecked manager, and the Logger is told so; its
// task was always journaled and is held the same way. ReadRunStarted
// reads the record without resuming (the CLI adopts the journaled task
// so).
//
// Durability. The journal is the run's durable truth (§3.6: a record
// per event, appended once the event is committed; §6: a restore debits
// committed spend exactly once). A state change is journaled before it
// is visible where it can be refused instead — a spawn, a defined
// analyst, a requested analysis: the verb fails and nothing happened
// (a spawn whose record was refused leaves the tree, and its sequence
// number is given back when no spawn came after it). A worker's
// settlement is shown to its manager — await_event, observe_agent,
// Reentry — only once its record is durable (or its loss counted);
// the pool, which commits the charge first, may hold it before, but
// a spawn the freed budget admits is journaled after it.
// Where the change already happened when its record is refused — a
// worker's settlement, the manager's metered spend, a submitted result,
// a control acknowledgement, a graph edge noted — the run goes on, but
// Supervise then returns its result together with a *JournalLossError
// (ErrJournalIncomplete) naming the lost records: the result is true,
// the journal cannot reproduce it, and success is never reported
// silently. The finished record carries the loss, so a resume to that
// result reports it again. A journal taken over by another process
// (store.ErrFenced) is no loss but ErrSpawnLogLost: no result at all.
//
// Authored profiles. spawn_worker's profile names a registered worker
// profile (Options.Profiles) or, when Options.AuthoredProfiles is set,
// is an authored AgentProfile object the manager wrote (§3.6 "the
// authored profile → the profile that will run"). It is checked after
// max-live-workers and before any reservation: parsed strictly (a bad
// one is refused invalid-identity, cause profile-invalid, with the JSON
// pointer of its first issue under /profile), held to AllowedModels
// (under which it must name its model.default; every model it names,
// model.small, seats, subagents and modes too, must be allowed),
// and refused preflight-refused (not-authorized) when it would run
// commands or open connections unless an AuthorizeSpawn hook decides
// (SpawnRequest.Authored). Its spawn record journals the profile's
// digest and canonical document (at most MaxAuthoredProfile bytes); a
// resumed run re-reads the document and refuses a journal whose digest
// no longer matches, so a worker left unsettled and spawned again runs
// the same profile. spawn_worker's description is then the manager's
// guide to authoring: the registered names, an example profile, the
// allowed models and the refused surfaces.
//
// The core under it is the Scope that admits or refuses every spawn, the
// deterministic node ids and lifecycle, and the truthful totals of a
// tree.
//
// Keys and assignments belong to the manager that spawns (§3.6 "Keyed
// spawns", behaviour 44): the root and every nested manager keep their
// own key registry, as the reference's nested scopes each do, so the
// same key under two managers is two assignments, each admitted, run and
// settled on its own. Under one manager a key answers by its latest
// spawn: live, duplicate-key; another request, key-conflict; done, its
// committed result (resumed: completed, nothing runs); down, a fresh
// spawn (resumed: retried, with the prior worker and reason); started
// without a terminal receipt, in-doubt (checked first). A spawn's
// assignment is "key:<k>", else "ordinal:<n>" counting that manager's
// unkeyed spawns from 0, as the reference does; spawn_worker's reply
// carries it as assignment and, under the reference's name, assignmentId,
// beside its continuity ("fresh" or "resume"). A resume replays the journal's spawns under
// their journaled parents, so every cut rebuilds each manager's
// registry; the journal records nothing more for it.
//
// A spawn_worker call that names no continuity takes its profile's
// default from Options.ContinuityByProfile (§3.6 continuityByProfile).
// A defaulted resume spawns fresh when its label has no live or settled
// worker (the reference's declared default degrades to fresh: the first
// spawn is ordinary) and otherwise refuses as an explicit one does
// (resume-while-live, resume-with-key). The continuity a spawn resolved
// to is journaled on its spawned record (continuity "resume" and
// resumeOf, the worker it re-attaches to), and a resume restores it
// rather than resolving it again, so a replayed call reports the same
// continuity the first process's did.
//
// A Scope sits over a ledger.Pool. Every admitted spawn reserves its
// ceiling (the request's budget merged per field over ScopeOptions.PerWorker)
// before anything runs (Supervise refuses a PerWorker that caps a channel
// above its Budget, or names dollars or a resource the Budget does not
// budget, with a *PerWorkerExceedsBudgetError, as the reference refuses
// such a perWorker at construction: no spawn could ever reserve it); Settle commits what was observed and frees the
// rest. A refused spawn changes nothing: no reservation, no sequence
// number, no live slot. Refusals are *Refusal values whose Code is one of
// the spec's codes (usd-unbudgeted, budget-exhausted, depth-exceeded,
// duplicate-key, in-doubt, invalid-identity, key-conflict,
// max-live-workers, scope-aborted, scope-settled, preflight-refused,
// resume-no-prior, resume-while-live, resume-with-key). The pool checks
// a reservation in spec §6 order, the first that applies refusing it: the
// deadline; a dollar channel tainted by unreported dollars; tokens, then
// iterations, must fit; more than $0 of a pool without a dollar ceiling is
// usd-unbudgeted ($0 is admitted); dollars, then named resources by name,
// must fit. A budget-exhausted Refusal names the channel (Cause) and its
// Shortfall; its Detail, the tool result's reason, says what is free and
// the largest request that fits ("… spawn again with
// budget.maxIterations at most 58, or ask the caller for a larger root
// budget"; for tokens and dollars, less, since the driver's own metered
// turns draw on the same pool), that nothing is left, or that no smaller
// request fits; under a nested manager it names the pool granted to that
// manager instead of the run's. Every other refusal's reason names its
// own cause in a sentence and never the pool.
//
// A spawn's parent is its manager: the root spawns under itself or under
// a nested manager's node, a nested manager under its own node only
// (not-own-parent). A parent that is a plain worker is refused
// invalid-identity, cause parent-not-manager: its child would be funded
// from the worker's reservation while its settlement and questions went
// to a brain that does not exist, and the root's await_event would
// answer idle while it ran.
//
// Node ids are deterministic: the child admitted with scope sequence n
// under parent p is "p:sn", counted in admission order and never from a
// clock. Nodes move through pending, acquiring, running, waiting, done,
// failed and cancelled by legal transitions only.
//
// Unknown is never zero. Totals reports spentTotal with explicit
// TokensKnown and USDKnown, and SpendGaps names every node that never
// settled (charged at its ceiling) or settled without reporting a
// channel.
//
// Another process with access to the run dir steers and cancels a
// running run through files (the cross-process run layout of §3.6):
// WriteWorkerSteer publishes steers/requests/<hash(opId)>.json,
// CancelWorker appends to cancellations/requests.ndjson, CancelRun
// writes cancellations/run.request.json. Each is keyed by its operation
// id (a same-body retry returns the first request; a changed body is a
// *ConflictError). Supervise scans for them every ControlScanInterval
// (reading only what the cancellation log gained, and listing
// steers/requests again only when the directory changed, or at least
// every 10 s, so a scan does not cost every request the run was sent),
// applies each once, journals request and acknowledgement, and expires
// what is still open at run end (not_live when never applied, unknown
// when an abort's end was not observed). A worker cancellation naming a
// label no worker has yet stays open (unknown) and is applied when the
// manager spawns one under it; if none ever does, run end expires it
// unknown with "the run has no worker …". A worker in doubt after a
// restart (started by an earlier process, no terminal record) may still
// run there: its cancellation is unknown, never not_live, and a steer to
// it is not_live saying it is in doubt. A request written after the
// run ended is read back not_live, or, when the run's journal shows it
// never had a worker the request names, refused (a steer) or unknown (a
// cancellation) with "the run has no worker …", as a running supervisor
// answers it; a run cancellation under a new operation id is then a
// *RunEndedError (not_live): the run's one cancellation stays the first.
//
// Questions. A worker asks its manager through Work.Ask: it is waiting
// until the decision comes (answer_question) or its context ends (the
// question expires). KernelExecutor raises a question interaction of a
// worker's turn (the contract's interactions, kind question) this way
// and answers the request with the decision — an answer accepted into
// the request's answer field, a deferral (or an answer that does not fit
// the form) declined — while a request withdrawn first (its timeout, the
// turn's end) expires the question. A question's options are §3.6's
// {label, tradeoff} in tool replies and journals alike (QuestionOption;
// a plain string is taken as a label,
// which is how a question journaled before tradeoffs reads back), and
// list_questions shows both. A question is bounded
// (MaxQuestionBytes over question, reason, labels and tradeoffs;
// MaxQuestionOptions), and one the coordination log
// refused is a journal loss like any record of a change already made.
// A resumed run lists its earlier processes' questions again (answered,
// deferred, or expired with their askers) and numbers new ones after
// them. It reads them from the run's journal whatever its medium: the
// run dir's coordination log beside a file spawn journal; a store spawn
// journal (Options.SpawnStore) holds them itself, as KindQuestionAsked
// and KindQuestionDecided records (also written to the coordination log
// when the run has a run dir), so a run that moves between machines, or
// has no run dir, resumes with the same numbering, statuses and
// re-offers (TestResumedRunKeepsQuestionIDsFromStoreJournal,
// TestResumedRunReoffersTheLeadsQuestionFromStoreJournalWithoutRunDir).
// A store journal written before it held them falls back to the run
// dir's coordination log.
//
// Where the root's question goes (§3.6 escalateQuestion). The run's root
// manager has no parent manager: its ask_parent, and its answer_question
// escalating to parent, hand the question to Options.EscalateQuestion,
// called through callHook and bounded by DefaultEscalateQuestionTimeout.
// Delivered (the hook names who holds it), the reply is queued-for-parent
// with that name, and the question is listed escalated: the root's own
// question is decided so (its answer reaches the manager as a steer to
// the root), a worker's stays undecided — answerable, and holding stop
// while blocking — until the manager answers it. Otherwise — no hook
// (there is no default operator queue), a refusal, an error, a panic, a
// hook that does not answer in time — the reply is no-parent with the
// reason and the guidance that the manager is the last decider and must
// not wait; the root's own question is listed expired (its guidance
// says so: there is nothing for answer_question to decide), a worker's
// stays open (its guidance names answer_question's answer or
// deferReason). escalateTo user does not call the hook. Nested managers never
// call it: their parent is their parent manager, and the chain ends at
// the root. Every escalation is journaled record-only (CoordRecord kind
// escalation; KindQuestionEscalated in a store journal) with the tool
// call that made it: a resumed manager whose loop runs that call again
// gets its outcome back (replayed) and the hook is not called again
// (TestEscalateQuestionNotCalledAgainOnResume); a question an earlier
// process escalated delivered is listed escalated, decided.
//
// What a resumed run owes a question (§3.6 "Questions" and "Persistence
// & resume": the coordination log is evidence, never auto-delivered). An
// asker waits in its process: a worker's Work.Ask ends with it, so an
// earlier process's undecided question is listed expired, and a worker
// run again asks again, under a new id. The one asker that outlives its
// process is a nested manager the resumed run drives again whose
// journaled conversation holds its ask_parent as queued at its parent
// (TranscriptMessage.Asked): it does not ask again, so it is answered.
// Undecided, its question is its parent's open question again, under
// its id: the parent's next await_event returns it (unless the parent's
// journaled conversation took it already, TakenEvent.QuestionID) and the
// decision joins the nested manager's inbox. Decided and delivered
// before the crash (journaled), that decision stays the answer, and it
// joins the inbox again when the nested manager's conversation never
// saw it. A question is never decided twice. Within a process an
// await_event takes an event only when the manager's loop recorded its
// result: a call its context cut after Await took an event puts the
// event back in the queue, in its place, for the next await. A manager
// served over MCP (package coordmcp) has no such record: there the
// event is taken when the call returns it with its context live
// (Coordinator.PutBackUnreturned), and a concurrent await waits for an
// event so held rather than answering idle.
//
// Acquiring and teardown. An executor that reports acquiring
// (AcquisitionReporter; KernelExecutor does) starts its workers pending
// and moves them with Work.Acquiring — while their environment is being
// created — and Work.Running. A worker whose teardown was never
// acknowledged — still running when the run ended, or settled while its
// executor could not confirm its environment was destroyed
// (WorkResult.TeardownUnconfirmed) — is named in
// SupervisedResult.TeardownUnconfirmed {id, label, runtime, status},
// journaled (KindTeardownUnconfirmed), and keeps its capacity slot
// charged (Scope.HoldSlot; §15 behaviour 51), also on resume. Every
// environment an executor released when its worker settled
// (WorkResult.Teardowns) is journaled as one environment-teardown record
// (KindEnvironmentTeardown), destroyed or not.
//
// Ownership. A run whose spawn journal is its run dir's file is owned
// through the run dir's LockFile (supervise.lock): an advisory lock the
// supervisor holds for its life, naming its pid, host, start and run id,
// so a second supervisor is refused at once (*RunDirLockedError), and
// released by the process's end however it ends. A run journaled in a
// store is owned through the store's lease fence instead; its run dir,
// when it has one, is held through its coordination log's lock, and a
// second supervisor on that run dir is refused the same way
// (*RunDirLockedError naming the holder's pid) before it touches the
// lease. A store run a process never created (it stopped first) has no
// journal yet: ReadRunStarted says fs.ErrNotExist, as for an empty run
// dir, and a --resume starts it.
//
// Steering. A worker of an executor that reads inboxes (InboxReader;
// KernelExecutor does) gets an Inbox: a steer from steer_agent or from a
// run dir steer request waits there until the worker's turn ends, and
// the executor takes it as the next turn's input (in the same kept
// environment), which is when the steer is acknowledged delivered; a
// worker that takes no more turns seals its inbox and the steer is
// not_live. With a run dir, workers/<stem>.inbox.ndjson records each
// steer posted, taken or dropped. An executor with its own inbox
// implements Steerer instead, and its acceptance is the delivery.
// steer_agent is journaled with the same steer-requested and
// steer-acknowledged records as a steer file. A steer whose worker is
// the run id goes to the manager's own inbox (Coordinator.ManagerInbox)
// when its brain reads one: the router brain joins it before its next
// model call, coordmcp.HarnessBrain hands it to the external harness
// with its next coordination tool result; other brains answer
// unsupported. A router manager's steer is delivered only once it is
// durable in the manager's journaled transcript (§3.6, issue 13): the
// turn holds it provisionally, the checkpoint journaling the user
// message that holds it (whose Took names it by operation id)
// acknowledges it, and a turn that ends first gives it back. A steer to
// the root, or to a nested manager the resumed run drives again, that a
// killed process accepted but never acknowledged is re-offered to that
// manager by the resumed run ahead of new ones, or acknowledged
// delivered without being queued again when its journaled transcript
// already holds it: the resumed manager sees it exactly once, and its
// sender's unknown claim is replaced by the outcome.
//
// Options.AuthorizeMessage is the product's authority over every message
// down to a worker, whichever way it came (steer_agent, a root steer, a
// run dir steer request, a graph's routed finding, answer_question): it
// sees a DownMessage before delivery and returns the text to deliver,
// possibly narrowed, or an error (an empty text refuses too). A refused steer is journaled as
// requested and acknowledged refused ("not authorized: ..."), which
// steer_agent's result and agentrt steer say; a refused answer is
// answer_question's refusal message-not-authorized. A hook that panics or
// outlives DefaultAuthorizeMessageTimeout refuses; a steer re-offered on
// resume is authorized again.
//
// Where the spawn journal lives. SpawnLog is its one interface: the run
// dir's spawn-journal.jsonl (OpenFileSpawnLog, owned through the
// journal's file lock) or, with Options.SpawnStore, a run in a
// store.Store such as SQLite or PostgreSQL (OpenStoreSpawnLog), owned
// through the store's lease generation: a holder taken over after its
// lease lapsed writes nothing more, whichever host it runs on. A holder
// that learns it lost the lease — a renewal refused after it was paused,
// or its lease run out while the store did not answer — stops its brain
// and workers at once and returns ErrSpawnLogLost, leaving the run to
// the next holder (TestPausedSupervisorLosesTheJournalBehaviour46,
// TestJournalStoreStopsAnsweringMidRunLeaseLapses). It cuts them, as it
// does when its caller's context ends with a cause matching
// contract.ErrLeaseLost, with a cause matching both ErrSpawnLogLost and
// contract.ErrLeaseLost — a lease that ran out unanswered too, since
// another process may hold the run by then: a worker's kernel run ends
// interrupted (as a run whose own lease was lost), its provider leaves
// the turn running rather than cancel it, and KernelExecutor does not
// destroy its environment (naming it in TeardownUnconfirmed), for the
// next holder may be recovering that execution
// (TestWorkerOfALostStoreJournalIsLeftToTheNextHolder).
//
// Manager spend. The router brain's every model turn is charged to the
// pool when the turn ends (a nested manager's to its node) and journaled
// once, which a resumed run charges again: on the next transcript
// record, which holds what the turn said (Record.Spent), or, for a turn
// no checkpoint journaled (it failed, the loop ended, the checkpoint
// was refused), as a metered record of its own (KindMetered). Journals
// of older versions, a metered record for every turn beside transcript
// records without spend, replay as before. A caller's brain may meter
// through Coordinator.Meter or TurnMeter (a metered record per turn) or
// report its usage in BrainReport.Metered. A root brain whose turn
// reports usage while it runs (coordmcp.HarnessBrain: an external
// harness's turn, which makes many model calls) opens a DriverTurn: the
// opening is journaled (KindDriverTurn), each model call the harness
// reports is charged and journaled as it arrives (a metered record
// keyed by the turn), and the turn's end charges what its final report
// adds (KindDriverTurnEnded). A process killed mid-turn keeps the calls
// journaled before it died, charged once on resume; the rest of the
// turn's spend is unknown, the manager's gap on tokens and dollars,
// never 0.
//
// One rule for every manager's turn — the router root's, a nested
// manager's, an external harness's: it charges its tokens and dollars
// and no iteration. The iteration channel counts worker turns only, so
// a manager's turns never draw on the run's iteration ceiling
// (maxIterations) nor on a nested manager's node's reservation, and
// spentBreakdown.driverInference reads 0 iterations, known. This is
// the reference's rule (tangle-network/agent-runtime
// src/runtime/supervise/coordination-driver.ts meters each driver turn
// with iterations 0, "driver turns never consume the child-iteration
// budget"; supervise.ts meters a harness driver's spend so too). A
// nested manager is bounded by its node's token (and dollar)
// reservation, less what its children hold of it, and by its turn cap.
//
// Analysts (§9): a Lens is data only — question, instructions, tool
// group and bounds, decoded strictly by DecodeLens. The menu is
// BuiltinLenses, Options.Analysts and up to MaxDefinedLenses the manager
// defines (journaled). run_analyst runs a lens over a settled worker as
// a keyed analyst worker of the run: reserved from and charged to the
// pool, journaled, and answered from the journal on a resumed run; its
// output comes back from Await as a finding, never a deliverable.
//
// With Options.AnalystModel an analyst is an in-process tool loop: its
// lens's tool group (ToolGroupTools: trace tools over the run's settled
// workers) is mounted for the model and its limits are enforced (model
// calls past maxLlmCalls or maxIterations are not made, tool calls past
// maxToolCalls are refused as tool results, output past maxOutputChars is
// clipped). Each finding is appended to coordination-log.jsonl.
// run_analyst journals its request before the analyst's spawn, and a
// settlement whose AfterSettle hook runs stays marked until the hook
// returned: a resumed run runs such hooks again (after OnResume) and
// starts, or reports as not-run, each requested analysis that has no
// analyst.
//
// Online watching (§3.6 watchWorkers): with Options.WatchWorkers a
// detector panel (WatchWorkers.Detectors; nil is DefaultDetectors, the
// reference's StuckLoop(3) — kind repeated-action — and ErrorStreak(3))
// folds each spawned worker's tool calls as they end, fed from the
// worker's kernel observer (Work.Observer), no polling: a tool loop's
// ToolEnded, or an environment's tool parts in its event stream (a part
// counts once, when it reaches completed, error or failed; one that
// never ends counts as its turn ends, its end unknown). A detection is
// journaled in the coordination log (CoordFinding, outcome
// FindingDetected; KindFindingDetected in a store journal) and queued
// as a finding — Event kind finding, Lens "online:" and the detector's
// kind, WorkerID and Source the worker, Output the OnlineFinding as
// JSON — that the worker's manager's await_event returns while the
// worker still runs; at most MaxFindingsPerWorker per worker (default
// 3; negative: unlimited), counting what earlier processes raised.
// Analysts and nested managers are not watched, nor is a worker whose
// executor reports no tool calls. A caller's detector is bounded by
// DetectorTimeout through callHook; one that panics or does not answer
// is disabled for that worker and logged. A router manager's journaled
// conversation marks a taken online finding (TakenEvent.Online), so a
// resumed run does not take it for the worker's settlement.
//
// Stream logs. Beside the journal the run dir holds root-stream.jsonl,
// the manager's own stream (its model turns and tool calls), and
// workers/<label>.ndjson, each worker's log (spawned, its turns and what
// they streamed, steers, cancellations, settled), read by
// ReadRootStream and ReadWorkerLog. They are written off the spawn path
// through the journal writer without a flush per line, in batches (the
// writer lets a millisecond of lines gather once woken), bounded per file,
// and not at all once a store spawn log's lease is lost — nor are
// state.json and progress.ndjson, so a process taken over never
// overwrites its successor's projection. With
// Options.WorkspaceRoot and no RunDir the run dir is
// <root>/.agent/supervisor/<runId> (RunDirFor; an id that is not a
// plain name is escaped, RunDirStem, so two runs never share a
// directory; RunDirIn also finds a run in the directory an earlier
// agentrt made for its id, when that directory records it). A run dir's
// state.json names its run: a run opened on a
// directory whose state names another is refused
// (*RunDirMismatchError).
//
// External-harness brains (claude-code, codex, opencode) are
// coordmcp.HarnessBrain: the verbs of a live run served over MCP, which
// this layer cannot import. Not built yet: interactive-worker bindings
// of the run layout.
//
// The driver loop (§3.6 driverRetry, repromptOnUnmet). An external
// harness owns its turn loop: its process may die, its upstream may
// refuse for capacity, or it may end its turn while the run has
// delivered nothing. A brain that drives through
// Coordinator.DriveAttempts (HarnessBrain does) is entered again on the
// same run, endpoint and live workers, nothing restarted or replayed. A
// failure is classified (ClassifyDriverFailure): terminal — the run's own
// decision, a 4xx, a TerminalDriverError — ends the run at once;
// transient is retried after a doubling backoff, up to
// DriverRetry.MaxAttempts failures and MaxConsecutiveFailures in a row
// that made no progress; unavailable (429, 503, 529, a quota, an
// upstream code in the failure's text) pauses and is entered again
// without spending an attempt — only under a deadline, else it counts
// as a failure. Progress is a delivery (a passing submission, a worker
// that passed the check, the check turning met); while the check is
// unmet, spend and settlements are not progress. A completed attempt
// with the check unmet is re-prompted (Reprompt.Max, or UntilComplete
// under the run's deadline) with DefaultUnmetSteer or Reprompt.OnUnmet's
// instruction, until MaxBarren re-prompted attempts in a row delivered
// nothing; the budget, the deadline, a cancellation and the manager's
// stop bound every re-entry, asked again after each wait and right
// before a re-prompted driver is entered; a stop that lands in a
// backoff ends the run as a stop, and the deadline that ends an attempt
// or a wait is what the loop says stopped it. Each attempt is journaled
// (KindDriverAttempt; replay passes it over) and given to
// Options.OnDriverAttempt, whose panic is logged, never the run's
// failure; it and Reprompt.OnUnmet are waited for no longer than the
// run's deadline, a cancellation or a stop (OnDriverAttempt then
// ObserverGrace more). SupervisedResult.Continuation counts the
// attempts. A loop that failed after more than one attempt ends
// driver-failed with a *DriverAttemptsError naming the first and last
// failures.
//
// Worker retry (§3.6 workerRetry, onWorkerRetry). Options.WorkerRetry
// (zero value: never) starts a worker again, in the same reservation,
// only on two proofs that its attempt did no work: its error is a
// pre-spawn refusal (IsPreSpawnRefusal: a *NotStartedError, a bridge's
// or container pool's "acquire timeout after Nms", or a
// WorkerRetry.PreSpawn signature) not terminal by ClassifyDriverFailure,
// and it yielded no execution event (no turn started or event streamed
// on its Observer; binding an execution id is not one) and reported a
// spend known and zero on every channel. That is narrower than the driver's transient class on
// purpose: a re-run of an attempt that may have metered would spend
// twice. The wait doubles from InitialBackoff to MaxBackoff, within
// MaxAttempts, MaxTotal and the run's deadline (a wait that would end
// past it is not started); the worker then settles with its last
// attempt's error and spend. Each re-entry is journaled
// (KindWorkerRetry; replay passes it over, so a run cut between attempts
// resumes as any spawn without a settlement: recovered from its bound
// execution when the executor can, else in doubt) and passed to
// Options.OnWorkerRetry, bounded by ObserverGrace, its panic logged.
//
// Nested managers. A worker whose profile declares coordination verbs
// (IsManagerProfile) is a manager itself: instead of the Executor, its
// brain — Options.ManagerBrain, else the RouterBrain on Options.Router —
// drives a Coordinator bound to its node (Self), a view of the same run.
// Its spawn_worker admits children "<node>:s<seq>" (MaxDepth refuses
// depth-exceeded), counted against MaxLiveWorkers tree-wide and
// reserved from a pool carved from its own reservation (below); its
// await_event, list_questions and
// answer_question see its own children; observe_agent and steer_agent
// reach its subtree only (the root reaches every id); ask_parent, and an
// answer_question escalating to parent, queue the question at its parent
// manager (status queued-for-parent), whose decision reaches the asker
// (a nested manager's own question's decision joins its inbox). Its
// children's contexts are its own: cancelling it cancels its subtree;
// when its brain returns its children are cancelled and joined (at most
// SettleGrace) and it settles, through the completion gate, with its
// submitted result (else its brain's text) and what its brain metered,
// its turns' spend journaled under its node (tokens and dollars, no
// iteration; its router brain is held to its node's token and dollar
// reservation, never to its iterations). Its submitted result is
// journaled under its node (KindSubmitted, Record.Node) before it is
// accepted, as the root's is: a resumed run that drives it again knows
// it, so the manager settles with exactly that result and a second
// passing submission is refused. A submitted record naming no node, or
// the root, is the run's (journals written before nested managers
// journaled theirs hold only those). Its spawn record carries
// Runtime RuntimeManager, so a resumed run drives a nested manager the
// journal left live again under its id: its settled children are
// replayed by request, not executed again, and the root's repeated
// spawn of it re-attaches to it.
//
// Nested budgets (§3.6 nested scope; the reference's makeNestedScopeSeam
// and driver-executor.ts). A nested manager's grant — the spawn's budget
// over Options.PerWorker — bounds its whole subtree: its children reserve
// from a pool carved from its reservation (carve.go), made at its first
// child or metered turn, and its own metered turns are observed there
// too. A child that does not fit is refused budget-exhausted (or
// usd-unbudgeted when the grant caps no dollars); that is the manager's
// grant running out, not the run's, so it never ends the run
// budget-exhausted. Its router loop's turn gate holds, besides its own
// turns, its live children's token and dollar reservations and its
// settled children's charges: what they hold is not free for its next
// turn. When it settles its one ticket in its parent's pool is charged
// its own spend plus its children's charges (a channel its own spend
// left unknown at its ceiling); settled while children still run, that
// ticket holds its ceiling until the last of them settles. Children
// charged past its ceiling spill the excess into its parent's pool as
// they settle; dollars a carved pool does not cap go up to the nearest
// pool that does. Each pool conserves (free + reserved + committed =
// total on tokens, iterations and dollars; Coordinator.CarvedReadout),
// and the run's totals count a nested manager only for what of its
// ceiling its subtree's own counts leave (TreeCharged), so they equal
// what the run's pool charged. A resumed run rebuilds the carved pools
// by replaying the journal (spawns re-admitted, the manager's metered
// turns observed, settlements charged in order). A reservation without
// a token or iteration ceiling is not carved: its children reserve
// where it did, from its nearest carved ancestor's pool (the grant above
// it bounds them too), else the run's.
//
// Restart intensity and abort (§3.6 "OTP breaker: more than maxRestarts
// within withinMs → no-winner", and the no-winner arm aborted). As in the
// reference, the breaker (Options.MaxRestarts within
// Options.RestartsWithin; off unless RestartsWithin is set) restarts
// nothing: it counts the tree's downs — workers settled failed or
// cancelled, nested managers' children included — in a window sliding on
// the run's clock (Options.Now), while the root manager drives (the
// downs a stop, a cancellation, the deadline or the run's end cause are
// not counted). More than MaxRestarts within the window trip it: a
// KindBreakerTripped record is journaled, the scope is aborted (every
// later spawn is refused scope-aborted), the manager is stopped and every
// live worker cancelled (their reason ErrBreakerTripped's), and the run
// ends no-winner all-children-down — the reference's reason for a trip,
// which outranks the abort it raised — with SupervisedResult.Breaker
// naming the downs, the bound, when and which worker tripped it. The
// trip happens before the settlement that caused it is delivered, so a
// manager awaiting it already finds the scope aborted. A caller's
// RootHandle (Options.Root, the reference's rootHandle) aborts the run
// the same way, journaled as KindAborted, and the run ends no-winner
// aborted: unlike the caller's context (also reason aborted, as the
// reference's caller abort signal is, but an interruption a resume
// drives on) and a CancelRun request (reason cancelled, with its source
// and operation id), a RootHandle abort is the run's end. The first end
// decides: a run whose deadline ended its manager before any of these
// (journaled, KindDeadlinePassed) is budget-exhausted whatever came
// after it, as the reference's deadline that won the abort race is.
// A worker cut by the run's end carries the upstream reason in its
// result and journaled settlement, as the reference's cascaded abort
// does, never only "context canceled": the caller's cause ("the run's
// caller ended its context: …"), the run's deadline ("the run's deadline
// (…) passed"), the CancelRun operation, the trip or abort, or "the
// manager returned".
// Each process counts the downs it
// sees: a resumed run does not count its replayed settlements again, as
// the reference's breaker counts only what its journal is appended. But
// a run whose journal holds a trip or an abort stays aborted when
// resumed — the same no-winner, its manager not driven, nothing run or
// spent — whether its finished record was written or not
// (TestTrippedRunResumesTrippedWithoutRunning, file and SQLite
// journals).
//
// The no-progress bound (§3.6 stopRule, onProgressStop: a run settles
// only on its deadline, a cancellation, an exhausted budget, an accepted
// result, or the no-progress bound). Options.StopRule is a rule over the
// root manager's progress (ProgressView: its workers' settlements in
// journal order, the best delivered objective so far — a verdict's score,
// 1 for an unscored delivery, nil for none — the settlements since it
// last rose, the time since the last one, its running workers' stalls),
// built from NoProgressFor, Plateau and AllWorkersStalled (AnyOf, AllOf),
// whose thresholds are the caller's with no default, as the reference's
// stop-rules are. As in the reference it is read at two points: after
// each settlement of a root worker (every brain; the reference's harness
// arm reads it there), and before each router-brain model turn after the
// first (the reference's router driver's stopBefore); it is pure, and
// never a timer. It is the caller's code, so each call (and
// OnProgressStop's) is bounded by DefaultStopRuleTimeout: a rule that
// panics or has not answered fails the run — no-winner driver-failed
// with a *StopRuleError, no finalizer run, as the reference's run fails
// when its synchronous rule throws on the driver's path (a run silently
// without the bound its caller set would be a failure read as a
// success) — and an OnProgressStop that has not returned is not waited
// for. It only adds a stop: it is read only while the manager drives
// (not once its brain returned: a worker settling within
// ChildSettleGrace does not read it) and nothing else ended it (Stop,
// an accepted submit_result — the driver loop closed result-accepted,
// so a rule that fails on a later settlement does not take the accepted
// result's win — an abort, a cancellation, the deadline, a trip); the
// other way round, a submit_result once the rule failed, or once the
// deadline, an abort or a cancellation ended the manager's brain
// context, is refused scope-settled (the first end decides). When it
// stops, the stop is journaled
// (KindProgressStopped, its reason and time) before it acts,
// OnProgressStop is told once, the scope is aborted, the manager stopped
// and the live workers cancelled (ErrProgressStopped, which matches
// ErrStopped: a stopped manager, not a failed one), and the run ends as
// a stopped manager's does — the winner when a worker delivered or the
// manager submitted, else the reference's residual no-winner
// all-children-down (budget-exhausted when a ceiling was reached) — with
// SupervisedResult.ProgressStop naming the reason, and a driver loop's
// DriverContinuation.ClosedBy "stop-rule" with its StopReason (as the
// reference's closedBy/stopReason; "stop" and "result-accepted" for the
// manager's own stop and an accepted submission). The first end decides:
// a cancellation while the stopped run's workers settle does not make it
// cancelled, and a resumed run whose journal holds the stop stays ended
// by it, its manager not driven, OnProgressStop not told again. Settled
// records of a run with a StopRule carry their time (Record.AtMS), so a
// resume reads the same history (TestStopRuleEndSurvivesResume).
//
// Extra tools (§3.6 extraTools, executeExtraTool). Options.ExtraTools are
// work tools the root manager's router brain is offered beside the
// coordination verbs (the reference's router arm only; refused with any
// other brain but an ExtraToolsOfferer — package graph's root brain,
// which offers them through the router brain or hands
// Coordinator.ExtraTools to a caller's brain), so that it can act itself as
// well as delegate: each is a contract.Tool whose Run is the caller's
// executeExtraTool, its result the call's tool result, its error a tool
// failure the manager reads. A name that is a coordination verb's (bare
// or with ToolPrefix) is refused at start (ErrInvalidOptions), as the
// reference refuses a work tool that shadows a verb. Each call is
// journaled before it runs (KindExtraToolCalled) and after
// (KindExtraToolDone, its result or error), keyed by the tool and the
// call's id, so a resumed manager whose transcript holds the call and
// not its answer — its loop runs the call again — gets the journaled
// outcome back, and a call whose outcome was never journaled is answered
// in doubt, not run again: the caller's function acts at most once
// (TestExtraToolCallActsOnceAcrossResume). Only such a re-run call reads
// the journal: a call whose id the provider reused (or gave none) is a
// call of its own and runs (TestExtraToolCallsSharingAnIDEachRun). Run's
// panic is the call's journaled error, and a call still running when its
// context ends is not waited for, left in doubt
// (TestExtraToolThatBlocksIsBoundedByTheRun).
//
// Product tools (§3.6 resolveSupervisorTools). ExtraTools stay the root
// router's static tools; Options.ResolveSupervisorTools gives every
// manager node — the root and each nested manager — tools of its own.
// It is called once per manager node, when its brain first asks
// (Coordinator.NodeTools; again in a resumed process), with the node's
// trusted NodeContext: RunID (stable across resume: the reference's
// runNamespace), NodeID (also its ownerId), Depth (0 for the root),
// AssignmentID (a nested manager's "key:<k>" or "ordinal:<n>" under its
// parent; "" for the root), a copy of its Profile, and its Task. Each
// call of a resolved tool is told that context and its call id
// (ToolCallContext; "" over MCP), and runs with a context that ends when
// its manager's brain context does — the caller, the deadline, an abort
// or breaker, a stop, a cancelled parent — even when the transport's
// request goes on; a call that arrives after that context ended is
// refused, neither journaled nor run. The router brain offers them in its tool loop (root
// and nested; a nested manager never sees the root's, nor the root its);
// coordmcp's HarnessBrain serves them on the coordination MCP beside the
// verbs (an external harness drives only the root); a caller's Brain
// gets them from NodeTools. Names follow the ExtraTools rule
// (checkToolNames: not a verb's, bare or prefixed; within MCP's name
// rule, 1 to 128 of A-Z a-z 0-9 _ - .; not twice; not one of the root's
// ExtraTools; with a Run). A refused set, or a resolver that
// errs, panics or has not answered once its manager's context ended
// (callHook), fails the manager before its loop or endpoint starts, as
// the reference's act() throws: the root's run ends driver-failed, a
// nested manager settles failed naming ErrResolveTools
// (TestResolveSupervisorToolsRefusedAtTheRoot,
// TestResolveSupervisorToolsNestedRefusalFailsTheLead). Calls are
// journaled by the ExtraTools machinery; a nested manager's records carry
// its node (Record.Node), and each manager keeps its own set of re-run
// calls, so a nested manager's call resumed at a cut is answered from the
// journal or in doubt, never run twice
// (TestResolveSupervisorToolsNestedCallActsOnceAcrossResume).
//
// Peer mail (§9 "Peer mail (opt-in peerMail)"; the reference's
// peer-mail.ts). Options.PeerMail (nil: off) gives every worker
// send_mail and read_mail bound to its own node (Work.PeerMail, beside
// Work.Ask): the sender is the tool's worker, never an argument, and
// neither tool can spawn, steer or stop. Mail goes to live siblings
// only — workers of the same manager; a settled or in-doubt sibling is
// refused already-settled (not queued) and is not among read_mail's
// peers (TestPeerMailInDoubtWorkerIsNoPeer), any other id unknown-worker. Refusals
// are tool results {delivered: false, error: code, reason, mailId}:
// self-addressed, subject-too-large, body-too-large (PeerMail's bounds,
// defaults 200 and 4096 bytes), forged-authority (a body or subject
// speaking as the supervisor), evidence-required (tell and challenge
// cite evidenceRefs), unknown-reply-target (replyTo names no mail
// addressed to the sender), thread-depth-exceeded, mailbox-full (16
// received per worker for the run, or 32 KiB of received body,
// MaxInboxBytes: TestPeerMailInboxBytesBound), send-quota-exhausted (8 attempts
// per worker, refused ones charged too); arguments that describe no
// message (ErrMailArgs) are a tool failure, not an attempt, and so is a
// send_mail called after its worker settled (ErrMailSenderSettled: an
// executor kept the tool; nothing delivered, journaled or charged —
// TestPeerMailSettledSenderRefused). One
// attempt's record is bounded whatever a sender passes, so no mail can
// outgrow the journal's 1 MiB record and fail the run with a lost
// record: a refused oversize subject or body is journaled clipped to
// its bound; to, replyTo and each evidence ref over MaxMailRefBytes, or
// more than MaxMailEvidenceRefs refs, are argument errors; PeerMail's
// byte bounds over MaxMailBodyBytesCeiling / MaxMailSubjectBytesCeiling
// are refused options (TestPeerMailHostileSizesKeepTheJournal). read_mail
// does not consume: it returns the worker's whole inbox, oldest first,
// its live siblings (peers), its send count and quota left. Every
// attempt is one coordination record (CoordMail; KindMail in a store
// journal, so read_journal shows it there) journaled before it takes
// effect, under the post office's lock (ids "mail-<n>" in journal
// order); a resumed run rebuilds mailboxes and send counts from those
// records (replayQuestions reads them where it reads questions), so mail
// sent before a cut is read after it once and the next id follows
// (TestPeerMailResumeKeepsMailboxes: file, SQLite, PostgreSQL). An
// executor whose workers run a tool loop offers Work.PeerMail as tools
// (TestPeerMailBetweenSiblingsBehaviour); KernelExecutor, whose workers
// are a provider's harness and cannot call Go tools, mounts them when
// its PeerMailMount is set — coordmcp.MountPeerMail serves them on a
// loopback MCP endpoint of the worker's own, a random capability in the
// path, mounted in a copy of its profile as PeerMailAlias and closed
// when the worker ends (agentrt supervise --peer-mail sets both:
// TestSupervisePeerMailBetweenClaudeWorkers). A nested manager
// (a lead) takes no mail: its router brain is offered neither tool, and
// mail addressed to it by a sibling is refused worker-has-no-inbox (the
// reference's refusal of a recipient without an inbox), the lead not
// among read_mail's peers (TestPeerMailAcrossManagersRefused); so does
// an analyst (run_analyst's lens, which is no worker of the channel):
// it is given no mail tools, is no peer, and mail to it is refused
// worker-has-no-inbox (TestPeerMailAnalystIsNoPeer). Once the
// siblings' manager stopped — its brain returned and its workers are
// being torn down, it called stop, or the run aborted — mail between
// them is refused scope-stopped, as the reference refuses mail once its
// scope stopped (TestPeerMailDuringTeardownRefusedScopeStopped); workers
// running on through ChildSettleGrace still mail each other. Mail is
// not pushed into a worker's steer inbox: the reference folds it into
// the recipient's inbox as a fenced, never-forceful peer block at its
// next step boundary, one that never holds a settle; here a
// KernelExecutor worker takes a further turn only for a steer
// (TakeOrSeal), so a pushed notice would either add turns a peer could
// force on a sibling or ride only on steer turns — it waits for an
// inbox kind that neither blocks a seal nor adds a turn. A worker reads
// its mail with read_mail (the reference's read_mail also re-reads).
//
// Above it, package graph interprets one supervised run as a fixed
// topology (runGraph) and keeps its edge ledger in this run's journal
// through Coordinator.Note.
package supervise
