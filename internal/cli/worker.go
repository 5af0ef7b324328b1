package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/spf13/cobra"
	otelprom "go.opentelemetry.io/otel/exporters/prometheus"
	"go.opentelemetry.io/otel/metric"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"

	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/contract"
	"github.com/agentrt/agentrt/fleet"
	"github.com/agentrt/agentrt/kernel"
	"github.com/agentrt/agentrt/store"
	"github.com/agentrt/agentrt/telemetry"
)

// fleetFlags select the fleet's database: --database or
// $AGENTRT_DATABASE_URL (PostgreSQL only; the fleet has no SQLite form).
type fleetFlags struct {
	database    string
	riverSchema string
	storeSchema string
}

func (f *fleetFlags) register(cmd *cobra.Command) {
	cmd.Flags().StringVar(&f.database, "database", "", "PostgreSQL connection URL of the fleet's database (default $AGENTRT_DATABASE_URL)")
	cmd.Flags().StringVar(&f.riverSchema, "river-schema", fleet.DefaultRiverSchema, "schema of River's job tables")
	cmd.Flags().StringVar(&f.storeSchema, "database-schema", "", "schema of the run store's tables, the same in every process of the fleet (default $AGENTRT_DATABASE_SCHEMA; none: the connection's search_path)")
}

// fleetCallTimeout bounds a fleet command's calls to the database.
const fleetCallTimeout = 2 * time.Minute

// bounded returns the command's context with fleetCallTimeout.
func bounded(cmd *cobra.Command) (context.Context, context.CancelFunc) {
	return context.WithTimeout(cmd.Context(), fleetCallTimeout)
}

func (f *fleetFlags) open(ctx context.Context, logger *slog.Logger) (*fleet.Fleet, error) {
	u := f.database
	if u == "" {
		u = os.Getenv("AGENTRT_DATABASE_URL")
	}
	if u == "" {
		return nil, usage("the fleet needs a PostgreSQL database: --database URL or $AGENTRT_DATABASE_URL")
	}
	schema := f.storeSchema
	if schema == "" {
		schema = os.Getenv("AGENTRT_DATABASE_SCHEMA")
	}
	fl, err := fleet.Open(ctx, fleet.Options{DatabaseURL: u, RiverSchema: f.riverSchema, StoreSchema: schema, Logger: logger})
	if errors.Is(err, fleet.ErrInvalid) {
		return nil, usage("%v", err)
	}
	if err != nil {
		return nil, &exitError{code: ExitFailed, err: fmt.Errorf("opening the fleet at %s: %w", redactURL(u), err)}
	}
	return fl, nil
}

// logExit is err, the error a long-running command ends with, as its
// log says it: with --log-format json, logged as its last JSON line
// (command, exit status, error), so a collector that reads only JSON
// lines sees why the process ended, and not printed again; otherwise err
// as it is, printed as plain text.
func logExit(logger *slog.Logger, format, command string, err error) error {
	if err == nil || format != "json" {
		return err
	}
	code, cause := ExitFailed, err
	if ee, ok := errors.AsType[*exitError](err); ok {
		code, cause = ee.code, ee.err
	}
	if cause == nil {
		return err
	}
	logger.Error("agentrt "+command+" stopped", "exit", code, "err", cause.Error())
	return &exitError{code: code}
}

// newLogger returns the logger of long-running commands: text or JSON
// on w.
func newLogger(w io.Writer, format string) (*slog.Logger, error) {
	switch format {
	case "text", "":
		return slog.New(slog.NewTextHandler(w, nil)), nil
	case "json":
		return slog.New(slog.NewJSONHandler(machine(w), nil)), nil
	}
	return nil, usage("--log-format must be text or json, not %q", format)
}

func newWorkerCmd(stdio IO) *cobra.Command {
	var ff fleetFlags
	var providerName, scriptPath, baseURL, openaiAPI, logFormat, id, metricsListen string
	var concurrency int
	var lease, rescue, shutdown, poll, backoff, maxBackoff time.Duration
	cmd := &cobra.Command{
		Use:   "worker --database URL",
		Short: "Execute fleet runs: River jobs on PostgreSQL, from any number of machines",
		Long: `Run a fleet worker: take the runs submitted with "agentrt fleet submit" for
--provider from the database's River queue of that name and execute each
through the kernel, recording it in the database's run store. Start as many
workers, on as many machines, as you like; each run is executed by one worker
at a time. A run whose worker dies (the run's lease lapses after --lease) is
taken over by another worker once River hands its job on (--rescue-after): the
dead worker's attempt reads interrupted, and the run is executed again as a
new attempt, unless that attempt had already finished, which is then adopted.
On a remote server (--provider remote) whose environment of the dead worker's
attempt is still alive, the new attempt re-attaches to that environment and
its turn instead of running the work again.

With --metrics-listen ADDR the worker serves Prometheus metrics at
http://ADDR/metrics: the fleet's (agentrt_fleet_runs_total by event and
queue, agentrt_fleet_queue_depth, agentrt_fleet_event_append_duration_seconds)
and its attempts' run metrics (agentrt_runs_total, the turn latency and, when
known exactly, tokens and cost), tracing or not.

The database must have been migrated ("agentrt fleet migrate"). Credentials
come from the environment as for "agentrt run" (OPENAI_API_KEY, ...), never
from jobs.

On SIGINT or SIGTERM the worker takes no new job, waits up to
--shutdown-timeout for its running attempts, then cancels them and hands their
runs back to the queue for another worker.

When the provider's server refuses the connection (a remote server that is
down), nothing ran: the run is handed back, and both its job and this worker's
next attempt on the provider wait, from --backoff doubling per refusal in a
row up to --max-backoff, jittered, instead of retrying at once.

With OTEL_EXPORTER_OTLP_ENDPOINT set, every attempt is traced over OTLP/HTTP
in the trace derived from its fleet run's id, whichever worker runs it — or,
for a run submitted under a span (a supervised run's worker on the fleet),
as that span's child in its trace.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) (err error) {
			logger, err := newLogger(stdio.Err, logFormat)
			if err != nil {
				return err
			}
			defer func() { err = logExit(logger, logFormat, "worker", err) }()
			provider, err := openProvider(providerName, scriptPath, baseURL, openaiAPI)
			if err != nil {
				return err
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			startCtx, cancelStart := context.WithTimeout(ctx, fleetCallTimeout)
			defer cancelStart()
			fl, err := ff.open(startCtx, logger)
			if err != nil {
				return err
			}
			defer fl.Close()
			var meter metric.Meter
			topts := telemetry.Options{}
			var runMetrics *telemetry.Metrics
			if metricsListen != "" {
				mp, stopMetrics, err := serveMetrics(metricsListen, logger)
				if err != nil {
					return &exitError{code: ExitFailed, err: err}
				}
				defer stopMetrics()
				meter = mp.Meter(fleetMeterScope)
				// The attempts' run metrics go to the same endpoint: through
				// the tracing when it is on, else on their own.
				topts.MeterProvider = mp
				if runMetrics, err = telemetry.NewMetrics(mp); err != nil {
					return &exitError{code: ExitFailed, err: err}
				}
			}
			tracing := startTracingWith(ctx, stdio, topts)
			defer stopTracing(ctx, stdio, tracing)
			wo := fleet.WorkerOptions{
				Providers:   map[string]contract.Provider{providerName: provider},
				Concurrency: concurrency, LeaseTTL: lease, RescueAfter: rescue, ShutdownTimeout: shutdown, PollInterval: poll, ID: id,
				Backoff: backoff, MaxBackoff: maxBackoff,
				Meter: meter,
			}
			switch {
			case tracing != nil:
				wo.Observe = tracing.AttemptObserver
			case runMetrics != nil:
				wo.Observe = runMetrics.AttemptObserver
			}
			w, err := fl.NewWorker(startCtx, wo)
			if errors.Is(err, fleet.ErrInvalid) {
				return usage("%v", err)
			}
			if err != nil {
				return &exitError{code: ExitFailed, err: err}
			}
			if err := w.Run(ctx); err != nil {
				return &exitError{code: ExitFailed, err: err}
			}
			s := w.Stats()
			logger.Info("worker done", "started", s.Started, "completed", s.Completed, "failed", s.Failed, "cancelled", s.Cancelled, "released", s.Released, "adopted", s.Adopted)
			return nil
		},
	}
	ff.register(cmd)
	cmd.Flags().StringVar(&providerName, "provider", "scripted", "provider to run on, and the queue to take runs from (scripted, openai, anthropic, claude-code, codex, opencode, remote)")
	cmd.Flags().StringVar(&baseURL, "base-url", "", "the provider's endpoint, as for agentrt run")
	cmd.Flags().StringVar(&openaiAPI, "openai-api", "", "the openai provider's wire protocol, as for agentrt run")
	cmd.Flags().StringVar(&scriptPath, "script", "", "script for the scripted provider (default: answer every task)")
	cmd.Flags().IntVar(&concurrency, "concurrency", fleet.DefaultConcurrency, "runs this worker executes at once")
	cmd.Flags().DurationVar(&lease, "lease", kernel.DefaultLeaseTTL, "lease of the runs this worker holds: how long after its death another worker may take them over (at least 1s)")
	cmd.Flags().DurationVar(&rescue, "rescue-after", fleet.DefaultRescueAfter, "when River hands the job of a silent worker to another worker (the run's lease still decides who runs it)")
	cmd.Flags().DurationVar(&shutdown, "shutdown-timeout", fleet.DefaultShutdownTimeout, "how long a stopping worker waits for its running attempts before handing them back")
	cmd.Flags().DurationVar(&poll, "poll-interval", 0, "how often to look for jobs when no notification arrives (default River's, 1s)")
	cmd.Flags().DurationVar(&backoff, "backoff", fleet.DefaultBackoff, "first wait after the provider's server refused the connection (it is down); doubled per refusal in a row, jittered")
	cmd.Flags().DurationVar(&maxBackoff, "max-backoff", 0, "longest such wait (default 30s, or half of --rescue-after if less)")
	cmd.Flags().StringVar(&id, "id", "", "this worker's name in run records (default host/pid/random)")
	cmd.Flags().StringVar(&logFormat, "log-format", "text", "log format on stderr: text or json (json: every line, the error it ends with included)")
	cmd.Flags().StringVar(&metricsListen, "metrics-listen", "", "serve Prometheus metrics at http://ADDR/metrics (e.g. 127.0.0.1:9464); off by default")
	return cmd
}

// fleetMeterScope is the instrumentation scope of the fleet's metrics.
const fleetMeterScope = "github.com/agentrt/agentrt/fleet"

// serveMetrics serves the worker's OpenTelemetry metrics in the
// Prometheus format at http://addr/metrics: the fleet's and the run
// metrics of its attempts, recorded on the meter provider it returns.
// stop shuts the server down within a deadline.
func serveMetrics(addr string, logger *slog.Logger) (*sdkmetric.MeterProvider, func(), error) {
	reg := prometheus.NewRegistry()
	exp, err := otelprom.New(otelprom.WithRegisterer(reg))
	if err != nil {
		return nil, nil, fmt.Errorf("metrics: %w", err)
	}
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(exp))
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		mp.Shutdown(context.Background())
		return nil, nil, fmt.Errorf("metrics: %w", err)
	}
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second, ErrorLog: slog.NewLogLogger(logger.Handler(), slog.LevelWarn)}
	go srv.Serve(ln)
	logger.Info("serving metrics", "url", "http://"+ln.Addr().String()+"/metrics")
	stop := func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		srv.Shutdown(ctx)
		mp.Shutdown(ctx)
	}
	return mp, stop, nil
}

func newFleetCmd(stdio IO) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "fleet",
		Short: "Submit runs to a worker fleet on PostgreSQL and watch them",
		Long: `Commands of the worker fleet: runs submitted as River jobs on PostgreSQL and
executed by "agentrt worker" processes on any number of machines.`,
	}
	cmd.AddCommand(newFleetMigrateCmd(stdio), newFleetSubmitCmd(stdio), newFleetStatusCmd(stdio), newFleetShowCmd(stdio), newFleetCancelCmd(stdio), newFleetRecoverCmd(stdio))
	return cmd
}

func newFleetMigrateCmd(stdio IO) *cobra.Command {
	var ff fleetFlags
	cmd := &cobra.Command{
		Use:   "migrate --database URL",
		Short: "Create or update the fleet's tables: the run store's and River's (in their own schema)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx, cancel := bounded(cmd)
			defer cancel()
			fl, err := ff.open(ctx, nil)
			if err != nil {
				return err
			}
			defer fl.Close()
			applied, err := fl.Migrate(ctx)
			if err != nil {
				return &exitError{code: ExitFailed, err: err}
			}
			if len(applied) == 0 {
				fmt.Fprintf(stdio.Out, "River's schema %s is up to date\n", fl.RiverSchema())
				return nil
			}
			fmt.Fprintf(stdio.Out, "River's schema %s: applied migrations %v\n", fl.RiverSchema(), applied)
			return nil
		},
	}
	ff.register(cmd)
	return cmd
}

func newFleetSubmitCmd(stdio IO) *cobra.Command {
	var ff fleetFlags
	var task, providerName, expect, key, runID string
	var stage int
	var timeout time.Duration
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "submit PROFILE --task TEXT --database URL",
		Short: "Submit a run of PROFILE (or - for stdin) to the fleet and print its run id at once",
		Long: `Submit one exact run of the profile in PROFILE to the fleet: the run is
recorded pending and its job enqueued on the --provider queue; a worker of that
provider executes it. The run id is printed at once; follow the run with
"agentrt fleet show RUN" from any machine. With --idempotency-key, submitting
again with the same key and request prints the same run id and enqueues
nothing; the same key with another request is refused.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx, cancel := bounded(cmd)
			defer cancel()
			if strings.TrimSpace(task) == "" {
				return usage("--task is required")
			}
			if err := checkTexts("--task", task, "--expect", expect); err != nil {
				return err
			}
			if err := checkGivenNotEmpty(cmd, "idempotency-key", "run-id"); err != nil {
				return err
			}
			if err := checkKey("--idempotency-key", key); err != nil {
				return err
			}
			if err := checkName("--run-id", runID, "a run id is a key of the run store; use letters, digits, '.', '_' and '-'"); err != nil {
				return err
			}
			if timeout < 0 {
				return usage("--timeout cannot be negative")
			}
			p, err := loadProfile(stdio, args[0], asJSON)
			if err != nil {
				return err
			}
			pv, err := p.Value()
			if err != nil {
				return &exitError{code: ExitFailed, err: err}
			}
			sub := fleet.Submission{
				Spec:           fleet.Spec{Profile: pv, Task: task, Provider: providerName, Expect: expect, Stage: stage, TimeoutMillis: timeout.Milliseconds()},
				IdempotencyKey: key, RunID: runID,
			}
			return submitToFleet(ctx, stdio, ff, sub, asJSON, false)
		},
	}
	ff.register(cmd)
	cmd.Flags().StringVar(&task, "task", "", "the task to give the agent (required)")
	cmd.Flags().StringVar(&providerName, "provider", "scripted", "provider to run on: the queue whose workers take the run")
	cmd.Flags().StringVar(&expect, "expect", "", "deliver only if the result contains this text")
	cmd.Flags().IntVar(&stage, "stage", 0, "seat stage to run (0 is the first)")
	cmd.Flags().DurationVar(&timeout, "timeout", 0, "bound each attempt of the run (it is recorded as timed out)")
	cmd.Flags().StringVar(&key, "idempotency-key", "", "make the submission idempotent: a retry with this key returns the same run")
	cmd.Flags().StringVar(&runID, "run-id", "", "the run's id (default: a new one)")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the run id, job id and whether the key replayed as JSON")
	return cmd
}

// submitToFleet submits a run to the fleet and prints its id at once:
// the id alone (or, with asJSON, the run id, job id and whether the key
// replayed) on stdout; with hint, how to follow it on stderr.
func submitToFleet(ctx context.Context, stdio IO, ff fleetFlags, sub fleet.Submission, asJSON, hint bool) error {
	fl, err := ff.open(ctx, nil)
	if err != nil {
		return err
	}
	defer fl.Close()
	res, err := fl.Submit(ctx, sub)
	if errors.Is(err, fleet.ErrInvalid) {
		return usage("%v", err)
	}
	if err != nil {
		return &exitError{code: ExitFailed, err: err}
	}
	if asJSON {
		return writeJSON(stdio.Out, map[string]any{"runId": res.RunID, "jobId": float64(res.JobID), "replayed": res.Replayed, "queue": sub.Spec.Provider})
	}
	fmt.Fprintln(stdio.Out, res.RunID)
	if hint {
		verb := "submitted"
		if res.Replayed {
			verb = "already submitted (same idempotency key)"
		}
		fmt.Fprintf(stdio.Err, "%s to the fleet's %q queue: an agentrt worker --provider %s runs it; follow it with\n  agentrt runs events %s --follow\n",
			verb, sub.Spec.Provider, sub.Spec.Provider, res.RunID)
	}
	return nil
}

func newFleetStatusCmd(stdio IO) *cobra.Command {
	var ff fleetFlags
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "status --database URL",
		Short: "Show the fleet's queues: jobs by provider and state",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx, cancel := bounded(cmd)
			defer cancel()
			fl, err := ff.open(ctx, nil)
			if err != nil {
				return err
			}
			defer fl.Close()
			st, err := fl.Status(ctx)
			if err != nil {
				return &exitError{code: ExitFailed, err: err}
			}
			if asJSON {
				jobs := []any{}
				for _, c := range st.Jobs {
					jobs = append(jobs, map[string]any{"queue": c.Queue, "state": c.State, "count": float64(c.Count)})
				}
				return writeJSON(stdio.Out, map[string]any{"jobs": jobs, "depth": float64(st.Depth())})
			}
			if len(st.Jobs) == 0 {
				fmt.Fprintln(stdio.Out, "no jobs")
				return nil
			}
			fmt.Fprintf(stdio.Out, "%-16s %-10s %8s\n", "QUEUE", "STATE", "JOBS")
			for _, c := range st.Jobs {
				fmt.Fprintf(stdio.Out, "%-16s %-10s %8d\n", c.Queue, c.State, c.Count)
			}
			fmt.Fprintf(stdio.Out, "waiting to run: %d\n", st.Depth())
			return nil
		},
	}
	ff.register(cmd)
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the status as JSON")
	return cmd
}

func newFleetShowCmd(stdio IO) *cobra.Command {
	var ff fleetFlags
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "show RUN --database URL",
		Short: "Show a fleet run: its status, its attempts as their kernel runs recorded them, its outcome",
		Args:  cobra.MatchAll(cobra.ExactArgs(1), runArg),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx, cancel := bounded(cmd)
			defer cancel()
			fl, err := ff.open(ctx, nil)
			if err != nil {
				return err
			}
			defer fl.Close()
			r, err := fl.Get(ctx, args[0])
			if errors.Is(err, store.ErrNotFound) || errors.Is(err, fleet.ErrNotFleetRun) {
				return &exitError{code: ExitFailed, err: err}
			}
			if err != nil {
				return &exitError{code: ExitFailed, err: err}
			}
			// Each attempt as its own kernel run tells it: a dead worker's
			// attempt reads interrupted there.
			recorded := make([]string, len(r.Attempts))
			for i, a := range r.Attempts {
				ar, err := fl.Store().GetRun(ctx, a.RunID)
				switch {
				case errors.Is(err, store.ErrNotFound):
					recorded[i] = "never started"
				case err != nil:
					return &exitError{code: ExitFailed, err: err}
				default:
					recorded[i] = string(ar.Status)
				}
			}
			if asJSON {
				attempts := []any{}
				for i, a := range r.Attempts {
					attempts = append(attempts, map[string]any{"generation": float64(a.Generation), "runId": a.RunID, "worker": a.Worker,
						"startedAt": a.StartedAt, "fleetStatus": nullableString(a.Status), "runStatus": recorded[i], "note": nullableString(a.Note)})
				}
				out := map[string]any{"runId": r.ID, "status": string(r.Status), "generation": float64(r.Generation),
					"owner": nullableString(r.Owner), "specDigest": r.SpecDigest, "attempts": attempts, "cancelRequested": r.CancelRequested}
				if r.Outcome != nil {
					v, err := canonjson.ToValue(r.Outcome)
					if err != nil {
						return err
					}
					out["outcome"] = v
				}
				for name, member := range map[string]any{"inDoubt": r.InDoubt, "recovery": r.Recovery} {
					if v, err := canonjson.ToValue(member); err == nil && v.Kind() == canonjson.Object {
						out[name] = v
					}
				}
				return writeJSON(stdio.Out, out)
			}
			fmt.Fprintf(stdio.Out, "run %s: %s (generation %d", r.ID, r.Status, r.Generation)
			if r.Owner != "" && !r.Status.Terminal() {
				fmt.Fprintf(stdio.Out, ", held by %s", r.Owner)
			}
			fmt.Fprintln(stdio.Out, ")")
			for i, a := range r.Attempts {
				fmt.Fprintf(stdio.Out, "  attempt %d  %s  worker %s  %s", a.Generation, a.RunID, a.Worker, recorded[i])
				if a.Note != "" {
					fmt.Fprintf(stdio.Out, "  (%s: %s)", orUnknown(a.Status), a.Note)
				}
				fmt.Fprintln(stdio.Out)
			}
			if oc := r.Outcome; oc != nil {
				if oc.JudgedBy != "" {
					fmt.Fprintf(stdio.Out, "outcome: %s, delivery decided by %s\n", oc.Status, oc.JudgedBy)
				} else {
					fmt.Fprintf(stdio.Out, "outcome: %s, delivered %v\n", oc.Status, oc.Delivered)
				}
				if oc.Text != "" {
					fmt.Fprintf(stdio.Out, "text: %s\n", clip(oc.Text, 200))
				}
				if oc.Error != "" {
					fmt.Fprintf(stdio.Out, "error: %s\n", oc.Error)
				}
			}
			if rc := r.Recovery; rc != nil {
				fmt.Fprintf(stdio.Out, "recovery: %s: %s\n", rc.State, rc.Detail)
			}
			if d := r.InDoubt; d != nil && (r.Recovery == nil || !r.Recovery.State.Final()) {
				fmt.Fprintf(stdio.Out, "environment %s kept: the turn is in doubt; agentrt fleet recover %s settles it\n", d.EnvironmentID, r.ID)
			}
			return nil
		},
	}
	ff.register(cmd)
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the run as JSON")
	return cmd
}

func newFleetCancelCmd(stdio IO) *cobra.Command {
	var ff fleetFlags
	var reason string
	cmd := &cobra.Command{
		Use:   "cancel RUN --database URL",
		Short: "Cancel a fleet run: a pending one at once, a running one by asking its worker",
		Args:  cobra.MatchAll(cobra.ExactArgs(1), runArg),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx, cancel := bounded(cmd)
			defer cancel()
			fl, err := ff.open(ctx, nil)
			if err != nil {
				return err
			}
			defer fl.Close()
			effect, err := fl.Cancel(ctx, args[0], reason)
			fmt.Fprintln(stdio.Out, effect)
			if err != nil {
				return &exitError{code: ExitFailed, err: err}
			}
			return nil
		},
	}
	ff.register(cmd)
	cmd.Flags().StringVar(&reason, "reason", "cancelled from the command line", "why, recorded with the request")
	return cmd
}
