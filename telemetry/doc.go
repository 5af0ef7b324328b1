// Package telemetry turns agentrt runs into OpenTelemetry traces with the
// current GenAI semantic conventions (spec runtime §10; checklist OS-05,
// OS-06).
//
// A Tracing owns one tracer provider and its exporter. Its Observer is a
// kernel.Observer for one run (kernel.Request.Observer): the run becomes
// an invoke_agent span whose trace id is derived from the run id
// (TraceID), so a resumed run rejoins its trace; its turn a
// gen_ai.client.inference child; each tool call the turn reports an
// agent.tool_call child of the turn. StartWorkflow traces a rounds run
// (kernel.Rounds) as an invoke_workflow span rooting the rounds run's
// trace, its Observe (kernel.RoundsOptions.Observe) making each
// iteration's invoke_agent span its child; EndWorkflow ends it.
// AttemptObserver traces an attempt (a kernel run of its own id doing
// another run's work, as a fleet run's attempts are) in the trace of the
// run it is an attempt of, so a run taken over by another worker stays in
// one trace — or, when the attempt runs under a remote span context (a
// fleet run submitted under a supervise node's span records it), under
// that span. StartRetained, FollowRetained and RecoverRetained trace a
// retained run, which the provider owns and any process may follow or
// recover: its trace id and its root span's id are both derived from the
// record id (TraceID, RetainedSpanID), so the starter's root, exported
// once the run is dispatched, parents the spans of every process that
// later attaches to or recovers the run; a follow span's tool calls are
// agent.tool_call spans under it (RetainedSpan.Event). Handler traces an HTTP server's requests (agentrt serve) as
// server spans continuing the W3C traceparent each carries. Usage is exported only when it is
// known exactly: unknown or partial usage is omitted and marked
// tangle.tokens_known=false / tangle.cost_known=false, never exported as
// 0. The deprecated gen_ai.system and prompt/completion token keys are
// never written, and neither are prompts, texts, tool arguments, tool
// output or error details: a span may travel to a third party.
//
// Given a metric.MeterProvider (Options.MeterProvider), a Tracing also
// counts ended runs (MetricRuns, with whether their tokens and cost were
// known), records each turn's latency (MetricTurnDuration) and, only when
// they are known exactly, its tokens (MetricTokenUsage) and the run's cost
// (MetricCost).
//
// FromEnv configures an OTLP/HTTP exporter from the standard
// OTEL_EXPORTER_OTLP_* variables (metrics too, to the same collector)
// and is off (nil) when no endpoint is set. Flush and Shutdown report what became of the spans: delivered,
// undelivered (an export failed, the collector rejected part of a batch,
// or a span was invalid and never sent) and dropped (the queue was full;
// Options.OnDrop is told how many).
//
// The package must not change what a run does: every failure here is
// logged and contained.
package telemetry
