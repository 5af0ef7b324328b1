package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/fleet"
	"github.com/agentrt/agentrt/kernel"
	"github.com/agentrt/agentrt/retained"
	"github.com/agentrt/agentrt/store"
	"github.com/agentrt/agentrt/store/postgres"
	"github.com/agentrt/agentrt/store/sqlite"
	"github.com/agentrt/agentrt/supervise"
)

// storeFlags selects the run store: SQLite by default, PostgreSQL when
// --database or $AGENTRT_DATABASE_URL names one.
type storeFlags struct {
	path     string
	database string
	schema   string
	// existing is set by commands that only read: a --db path with no
	// store behind it is an error for them, not a new empty store.
	existing bool
}

func (f *storeFlags) register(cmd *cobra.Command) {
	cmd.Flags().StringVar(&f.path, "db", "", "SQLite file of the run store (default $AGENTRT_HOME/agentrt.db, ~/.agentrt/agentrt.db)")
	cmd.Flags().StringVar(&f.database, "database", "", "PostgreSQL connection URL of a run store shared by many processes (default $AGENTRT_DATABASE_URL)")
	cmd.Flags().StringVar(&f.schema, "database-schema", "", "PostgreSQL schema holding the run store's tables, created if missing (default $AGENTRT_DATABASE_SCHEMA; none: the connection's search_path)")
}

// url is the PostgreSQL store asked for, if any.
func (f *storeFlags) url() string {
	if f.database != "" {
		return f.database
	}
	if f.path == "" {
		return os.Getenv("AGENTRT_DATABASE_URL")
	}
	return ""
}

func (f *storeFlags) open(ctx context.Context) (store.Store, error) {
	if f.database != "" && f.path != "" {
		return nil, usage("--db (SQLite) and --database (PostgreSQL) name two different stores; give one")
	}
	if f.schema != "" && f.url() == "" {
		return nil, usage("--database-schema names a PostgreSQL schema: it applies to --database (or $AGENTRT_DATABASE_URL), not to a SQLite store")
	}
	if u := f.url(); u != "" {
		schema := f.schema
		if schema == "" {
			schema = os.Getenv("AGENTRT_DATABASE_SCHEMA")
		}
		s, err := postgres.Open(ctx, u, postgres.Options{Schema: schema})
		if err != nil {
			return nil, &exitError{code: ExitFailed, err: fmt.Errorf("opening the run store at %s: %w", redactURL(u), err)}
		}
		return s, nil
	}
	path := f.path
	if path == "" {
		var err error
		if path, err = sqlite.DefaultPath(); err != nil {
			return nil, &exitError{code: ExitFailed, err: err}
		}
	}
	mustExist := f.existing && f.path != ""
	if mustExist {
		if err := checkStorePath(path); err != nil {
			return nil, &exitError{code: ExitFailed, err: err}
		}
	}
	s, err := sqlite.Open(ctx, path, sqlite.Options{MustExist: mustExist})
	if err != nil {
		return nil, &exitError{code: ExitFailed, err: fmt.Errorf("opening the run store: %w", err)}
	}
	return s, nil
}

// checkStorePath explains why there is no run store at path, if there is
// none: reading commands never create one.
func checkStorePath(path string) error {
	fi, err := os.Stat(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		what := "file"
		if _, derr := os.Stat(filepath.Dir(path)); errors.Is(derr, fs.ErrNotExist) {
			what = "directory " + filepath.Dir(path)
		}
		return fmt.Errorf("no run store at %s (the %s does not exist); check --db, or record a run there first with agentrt run --db %s", path, what, path)
	case err != nil:
		return fmt.Errorf("opening the run store at %s: %w", path, err)
	case !fi.Mode().IsRegular():
		return fmt.Errorf("no run store at %s: it is not a file (%s); check --db", path, fi.Mode().Type())
	}
	return nil
}

// describe names the store for people, without secrets.
func (f *storeFlags) describe() string {
	switch {
	case f.url() != "":
		return redactURL(f.url())
	case f.path != "":
		return f.path
	}
	if path, err := sqlite.DefaultPath(); err == nil {
		return path
	}
	return "the default store ($AGENTRT_HOME/agentrt.db)"
}

// redactURL drops the password from a connection URL so it never reaches
// output or logs.
func redactURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "the PostgreSQL database (unparsable URL)"
	}
	if u.User != nil {
		u.User = url.User(u.User.Username())
	}
	q := u.Query()
	if q.Has("password") {
		q.Set("password", "xxxxx")
		u.RawQuery = q.Encode()
	}
	return u.String()
}

func newRunsCmd(stdio IO, open providerOpener) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "runs",
		Short: "List, show, follow and cancel recorded runs; attach to and recover retained runs",
	}
	cmd.AddCommand(newRunsListCmd(stdio), newRunsShowCmd(stdio), newRunsEventsCmd(stdio), newRunsCancelCmd(stdio, open),
		newRunsAttachCmd(stdio, open), newRunsRecoverCmd(stdio, open), newRunsResumeCmd(stdio))
	return cmd
}

func newRunsListCmd(stdio IO) *cobra.Command {
	sf := storeFlags{existing: true}
	var asJSON bool
	var status string
	var limit int
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List recorded runs, newest first",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if status != "" && !store.Status(status).Valid() {
				return usage("unknown status %q", status)
			}
			s, err := sf.open(cmd.Context())
			if err != nil {
				return err
			}
			defer s.Close()
			runs, err := s.ListRuns(cmd.Context(), store.ListOptions{Status: store.Status(status), Limit: limit})
			if err != nil {
				return &exitError{code: ExitFailed, err: err}
			}
			if asJSON {
				out := make([]canonjson.Value, len(runs))
				for i, r := range runs {
					out[i] = runValue(r)
				}
				return writeJSON(stdio.Out, canonjson.ArrayValue(out))
			}
			if len(runs) == 0 {
				fmt.Fprintln(stdio.Out, "no runs recorded")
				return nil
			}
			// Columns as wide as their longest cell: run ids and kinds
			// vary in length (a seated run's stages, supervise workers).
			tw := tabwriter.NewWriter(stdio.Out, 0, 0, 2, ' ', 0)
			fmt.Fprintln(tw, "RUN\tSTATUS\tKIND\tSTARTED\tSUMMARY")
			for _, r := range runs {
				sum := summary(r)
				if at, ok := lapsedLease(r); ok {
					sum = fmt.Sprintf("lease of %s lapsed %s, no end recorded; %s", orName(r.Owner, "its holder"), at.Local().Format("2006-01-02 15:04:05"), sum)
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", r.ID, listStatus(r), r.Kind,
					r.CreatedAt.Local().Format("2006-01-02 15:04:05"), sum)
			}
			return tw.Flush()
		},
	}
	sf.register(cmd)
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the runs as JSON")
	cmd.Flags().StringVar(&status, "status", "", "only runs with this status (running, completed, failed, cancelled, timed_out, interrupted)")
	cmd.Flags().IntVar(&limit, "limit", 20, "at most this many runs (0 for all)")
	return cmd
}

// listStatus is runs list's status of r for people: the store's, but
// for a store spawn journal's run, which stays running in the store so
// that a resume may take it over, how the run ended once its record
// says so.
func listStatus(r store.Run) string {
	if r.Kind != supervise.SpawnLogRunKind {
		return string(r.Status)
	}
	if rec, err := supervise.RunRecordOf(r); err == nil {
		return string(supervise.RecordStatus(rec.Outcome))
	}
	return string(r.Status)
}

// summary is a short human description of a run from its typed record.
func summary(r store.Run) string {
	var parts []string
	var delivered *bool
	switch r.Kind {
	case kernel.KindRounds:
		rec, err := kernel.DecodeRoundsRecord(r.Doc)
		if err != nil {
			return "(unreadable record)"
		}
		parts = append(parts, fmt.Sprintf("%q", clip(rec.Task, 40)))
		if rec.Decision != "" {
			parts = append(parts, "decision "+rec.Decision)
		}
	case fleet.Kind:
		fr, err := fleet.DecodeRun(r)
		if err != nil {
			return "(unreadable record)"
		}
		parts = append(parts, fmt.Sprintf("%q", clip(fr.Spec.Task, 40)), fmt.Sprintf("%d attempt(s)", len(fr.Attempts)))
		switch {
		case fr.Outcome != nil && fr.Outcome.JudgedBy != "":
			parts = append(parts, "delivery decided by "+fr.Outcome.JudgedBy)
		case fr.Outcome != nil:
			delivered = &fr.Outcome.Delivered
		}
	case kernel.KindToolLoop:
		rec, err := kernel.DecodeToolLoopRecord(r.Doc)
		if err != nil {
			return "(unreadable record)"
		}
		parts = append(parts, fmt.Sprintf("%q", clip(rec.User, 40)))
		if rec.StopReason != "" {
			parts = append(parts, "stopped "+string(rec.StopReason))
		}
	case retained.Kind:
		return retainedSummary(r)
	case supervise.KindSupervise, supervise.SpawnLogRunKind:
		return supervisedSummary(r)
	case kernel.KindSeated:
		rec, err := kernel.DecodeSeatedRecord(r.Doc)
		if err != nil {
			return "(unreadable record)"
		}
		parts = append(parts, fmt.Sprintf("%q", clip(rec.Task, 40)), fmt.Sprintf("%d stage(s)", len(rec.Stages)))
		if n := len(rec.Stages); n > 0 {
			last := rec.Stages[n-1]
			parts = append(parts, fmt.Sprintf("stage %d %s", last.Stage, last.Outcome))
		}
	case kernel.KindRuntime:
		rec, err := kernel.DecodeRuntimeRecord(r.Doc)
		if err != nil {
			return "(unreadable record)"
		}
		parts = append(parts, "task "+clip(rec.TaskID, 40))
		if rec.ResultSummary != "" {
			parts = append(parts, fmt.Sprintf("%q", clip(rec.ResultSummary, 40)))
		}
	default:
		rec, err := kernel.DecodeRecord(r.Doc)
		if err != nil {
			return "(unreadable record)"
		}
		parts = append(parts, fmt.Sprintf("%q", clip(rec.Task, 40)))
		delivered = rec.Delivered
		if rec.JudgedBy != "" {
			parts = append(parts, "delivery decided by "+rec.JudgedBy)
		}
	}
	if delivered != nil {
		if *delivered {
			parts = append(parts, "delivered")
		} else {
			parts = append(parts, "not delivered")
		}
	}
	return strings.Join(parts, ", ")
}

// lapsedLease reports whether r reads interrupted only because its
// holder's lease lapsed before it recorded an end (the process holding
// it stopped, or was cut off from the store; no process holds it now),
// and when the lease lapsed. A recorded end clears the lease (and an
// exact run's record then holds its terminal state), so a run that
// ended interrupted is not one.
func lapsedLease(r store.Run) (time.Time, bool) {
	if r.Status != store.StatusInterrupted || r.LeaseUntil.IsZero() || time.Now().Before(r.LeaseUntil) {
		return time.Time{}, false
	}
	if kernel.IsExactKind(r.Kind) {
		if rec, err := kernel.DecodeRecord(r.Doc); err == nil && rec.Terminal != nil {
			return time.Time{}, false
		}
	}
	return r.LeaseUntil, true
}

// runValue is the JSON form of a run record. A run whose status is
// interrupted only because its holder's lease lapsed (lapsedLease)
// says so in leaseLapsed: {at, owner} — the store still holds it as
// the holder left it, live, with no end.
func runValue(r store.Run) canonjson.Value {
	members := []canonjson.Member{
		{Name: "id", Value: canonjson.StringValue(r.ID)},
		{Name: "kind", Value: canonjson.StringValue(r.Kind)},
		{Name: "status", Value: canonjson.StringValue(string(r.Status))},
		{Name: "createdAt", Value: canonjson.StringValue(r.CreatedAt.UTC().Format(time.RFC3339Nano))},
		{Name: "updatedAt", Value: canonjson.StringValue(r.UpdatedAt.UTC().Format(time.RFC3339Nano))},
		{Name: "revision", Value: canonjson.NumberValue(float64(r.Revision))},
	}
	if at, ok := lapsedLease(r); ok {
		members = append(members, canonjson.Member{Name: "leaseLapsed", Value: canonjson.ObjectValue([]canonjson.Member{
			{Name: "at", Value: canonjson.StringValue(at.UTC().Format(time.RFC3339Nano))},
			{Name: "owner", Value: canonjson.StringValue(r.Owner)},
		})})
	}
	if r.Doc.IsValid() {
		members = append(members, canonjson.Member{Name: "record", Value: r.Doc})
	}
	return canonjson.ObjectValue(members)
}

func newRunsShowCmd(stdio IO) *cobra.Command {
	sf := storeFlags{existing: true}
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "show RUN",
		Short: "Show one run's record: what was requested, what ran, what was observed",
		Args:  cobra.MatchAll(cobra.ExactArgs(1), runArg),
		RunE: func(cmd *cobra.Command, args []string) error {
			s, err := sf.open(cmd.Context())
			if err != nil {
				return err
			}
			defer s.Close()
			r, err := kernel.ReadRun(cmd.Context(), s, args[0])
			if errors.Is(err, store.ErrNotFound) {
				return noStoredRun(args[0])
			}
			if err != nil {
				return &exitError{code: ExitFailed, err: err}
			}
			if (r.Kind == supervise.KindSupervise || r.Kind == supervise.SpawnLogRunKind) && !asJSON {
				printSupervisedRun(cmd.Context(), stdio.Out, s, r)
				return nil
			}
			if r.Kind == retained.Kind && !asJSON {
				rec, err := retained.Load(cmd.Context(), s, args[0])
				if err != nil {
					return &exitError{code: ExitFailed, err: err}
				}
				printRetained(stdio.Out, rec)
				return nil
			}
			if asJSON {
				v := runValue(r.Run).With("eventsRecorded", canonjson.NumberValue(float64(r.Events)))
				switch {
				case r.LedgerEntries > 0 && (r.Kind == supervise.KindSupervise || r.Kind == supervise.SpawnLogRunKind):
					// Its entries are its workers' and its manager's:
					// their sum, in the kernel's amount form.
					entries, err := s.Ledger(cmd.Context(), r.ID)
					if err != nil {
						return &exitError{code: ExitFailed, err: fmt.Errorf("reading run %s's ledger: %w", r.ID, err)}
					}
					v = v.With("spend", supervise.LedgerSpend(entries))
				case r.LedgerEntries > 0:
					v = v.With("spend", kernel.UsageValue(r.Spend))
				}
				return writeJSON(stdio.Out, v)
			}
			printRun(stdio.Out, r)
			return nil
		},
	}
	sf.register(cmd)
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the run record as JSON")
	return cmd
}

// supervisedSummary is runs list's description of a supervised run's
// record, or of its store spawn journal's run.
func supervisedSummary(r store.Run) string {
	rec, err := supervise.RunRecordOf(r)
	switch {
	case errors.Is(err, store.ErrNotFound):
		return "a supervised run's journal: not ended"
	case err != nil:
		return "(unreadable record)"
	}
	parts := []string{fmt.Sprintf("%q", clip(rec.Task, 40)), fmt.Sprintf("%d worker(s)", len(rec.Workers))}
	if o := rec.Outcome; o.Status == supervise.StatusWinner {
		parts = append(parts, "winner "+string(o.Winner.Node))
	} else {
		parts = append(parts, "no winner: "+string(o.Reason))
	}
	return strings.Join(parts, ", ")
}

// maxTurnRuns bounds the later turns' runs runs show looks up for one
// worker of a supervised run (a KernelExecutor adds at most
// MaxSteerTurns, by default supervise.DefaultMaxSteerTurns).
const maxTurnRuns = 64

// printSupervisedRun writes a supervised run's record for people: the
// store's fields, then the result as agentrt supervise printed it, and
// where each worker's runs are — its first turn's, and those of the
// turns steers added ("<execution>.<n>", looked up in s).
func printSupervisedRun(ctx context.Context, w io.Writer, s store.Store, r *kernel.RunRecord) {
	rec, err := supervise.RunRecordOf(r.Run)
	status := string(r.Status)
	if r.Kind == supervise.SpawnLogRunKind {
		// The journal's run stays live in the store, so that a resume
		// may take it over; its record says how the run ended.
		status = "its spawn journal (resumable)"
		if err == nil {
			status = fmt.Sprintf("%s, from its spawn journal", supervise.RecordStatus(rec.Outcome))
		}
	}
	fmt.Fprintf(w, "run %s\n", r.ID)
	fmt.Fprintf(w, "  status    %s\n", status)
	fmt.Fprintf(w, "  kind      %s\n", r.Kind)
	fmt.Fprintf(w, "  started   %s\n", r.CreatedAt.Local().Format(time.RFC3339))
	fmt.Fprintf(w, "  updated   %s\n", r.UpdatedAt.Local().Format(time.RFC3339))
	switch {
	case errors.Is(err, store.ErrNotFound):
		fmt.Fprintf(w, "  record    none yet: the run has not ended (agentrt top follows a live run)\n")
		return
	case err != nil:
		fmt.Fprintf(w, "  record    unreadable: %v\n", err)
		return
	}
	fmt.Fprintf(w, "  task      %s\n", clip(strings.ReplaceAll(rec.Task, "\n", " "), 120))
	fmt.Fprintf(w, "  manager   %s %s\n", orName(rec.Manager.Name, "(unnamed)"), rec.Manager.ProfileDigest)
	printSupervised(w, rec.Result(), rec.RunDir)
	for _, wr := range rec.Workers {
		if wr.Execution == "" {
			continue
		}
		fmt.Fprintf(w, "  runs of   %s: %s (agentrt runs show %s)\n", wr.ID, wr.Execution, wr.Execution)
		for n := 1; n <= maxTurnRuns; n++ {
			id := fmt.Sprintf("%s.%d", wr.Execution, n)
			if _, err := s.GetRun(ctx, id); err != nil {
				if !errors.Is(err, store.ErrNotFound) {
					fmt.Fprintf(w, "            %s: its later turns' runs cannot be looked up: %v\n", wr.ID, err)
				}
				break
			}
			fmt.Fprintf(w, "            %s (steered turn %d)\n", id, n+1)
		}
	}
}

// printRun writes a run record for people: the fixed fields, then an
// exact run's typed record, or another kind's document members one per
// line (nested values as compact JSON).
func printRun(w io.Writer, r *kernel.RunRecord) {
	fmt.Fprintf(w, "run %s\n", r.ID)
	if at, ok := lapsedLease(r.Run); ok {
		fmt.Fprintf(w, "  status    %s: the lease of %s lapsed at %s with no end recorded (the process holding it stopped; none holds it now)\n",
			r.Status, orName(r.Owner, "its holder"), at.Local().Format(time.RFC3339))
	} else {
		fmt.Fprintf(w, "  status    %s\n", r.Status)
	}
	fmt.Fprintf(w, "  kind      %s\n", r.Kind)
	fmt.Fprintf(w, "  started   %s\n", r.CreatedAt.Local().Format(time.RFC3339))
	fmt.Fprintf(w, "  updated   %s\n", r.UpdatedAt.Local().Format(time.RFC3339))
	if rec := r.Exact; rec != nil {
		printRecord(w, r, rec)
		return
	}
	if r.Kind == fleet.Kind {
		// Its attempts are kernel runs of their own.
		fmt.Fprintf(w, "  fleet     a fleet run: agentrt fleet show %s lists its attempts\n", r.ID)
	} else if r.DocErr != nil {
		fmt.Fprintf(w, "  record    unreadable: %v\n", r.DocErr)
	}
	for _, m := range r.Doc.Members() {
		val := string(canonjson.Marshal(m.Value))
		if m.Value.Kind() == canonjson.String {
			val = m.Value.Str()
		}
		fmt.Fprintf(w, "  %-9s %s\n", m.Name, val)
	}
	fmt.Fprintf(w, "  recorded  %d events, %d ledger entries\n", r.Events, r.LedgerEntries)
}

// printRecord writes an exact run's record.
func printRecord(w io.Writer, r *kernel.RunRecord, rec *kernel.Record) {
	fmt.Fprintf(w, "  task      %s\n", clip(strings.ReplaceAll(rec.Task, "\n", " "), 120))
	fmt.Fprintf(w, "  provider  %s (stage %d)\n", rec.Provider, rec.Stage)
	served := string(rec.ServedModel)
	if served == "" {
		served = "unknown (not reported)"
	}
	fmt.Fprintf(w, "  model     requested %s, served %s\n", orUnknown(string(rec.RequestedModel)), served)
	fmt.Fprintf(w, "  profile   %s\n", rec.AuthoredProfileDigest)
	if e := string(rec.EffectiveProfileDigest); e != "" && e != rec.AuthoredProfileDigest {
		fmt.Fprintf(w, "  effective %s\n", e)
	}
	if t := rec.Terminal; t != nil && t.Reason != "" {
		fmt.Fprintf(w, "  why       %s: %s\n", t.Reason, t.Detail)
	}
	if r.Status == store.StatusInterrupted && rec.Terminal == nil {
		fmt.Fprintf(w, "  why       the process running it stopped (or lost its lease) before it ended\n")
	}
	printCheck(w, rec.Verdict, rec.CheckError)
	if rec.JudgedBy != "" {
		fmt.Fprintf(w, "  delivery  decided by %s, not by this run\n", rec.JudgedBy)
	}
	if rec.Delivered != nil {
		fmt.Fprintf(w, "  delivered %v\n", *rec.Delivered)
	}
	if rec.TeardownUnconfirmed != "" {
		fmt.Fprintf(w, "  teardown  NOT confirmed: %s\n", rec.TeardownUnconfirmed)
	}
	usage := r.Spend
	if rec.Usage != nil {
		usage = rec.Usage.Usage
	}
	if rec.Usage != nil || r.LedgerEntries > 0 {
		fmt.Fprintf(w, "  usage     input %s, output %s, cost %s\n", usage.InputTokens, usage.OutputTokens, usd(usage.CostUSD))
	} else {
		fmt.Fprintf(w, "  usage     unknown (none reported)\n")
	}
	if rec.Text != nil && *rec.Text != "" {
		fmt.Fprintf(w, "  result    %s\n", clip(strings.ReplaceAll(*rec.Text, "\n", " "), 120))
	}
	if rec.CancelRequested != nil {
		fmt.Fprintf(w, "  cancel    requested at %s: %s\n", rec.CancelRequested.At, rec.CancelRequested.Reason)
	}
	fmt.Fprintf(w, "  recorded  %d events, %d ledger entries\n", r.Events, r.LedgerEntries)
}

// eventsProgressEvery is how many events runs events prints between
// updates of its count.
const eventsProgressEvery = 2000

func newRunsEventsCmd(stdio IO) *cobra.Command {
	sf := storeFlags{existing: true}
	var asJSON, follow bool
	var after string
	cmd := &cobra.Command{
		Use:   "events RUN",
		Short: "Print a run's durable events, optionally following new ones",
		Long: `Print a run's events in order from the store. --after CURSOR resumes after a
cursor a previous call printed; --follow keeps polling until the run ends.
A fleet run's events are its attempts' (the kernel runs of the workers that
executed it), attempt after attempt: --follow waits for a worker to claim the
run, follows a takeover to the next attempt, and stops once the run ended;
with --json each line names its attempt, and its cursor (g<generation>/<event
cursor>) resumes after that event with --after, into later attempts too.
With stdout redirected and stderr on a terminal, a count of the events
printed so far shows on stderr.`,
		Args: cobra.MatchAll(cobra.ExactArgs(1), runArg),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			s, err := sf.open(ctx)
			if err != nil {
				return err
			}
			defer s.Close()
			progress := newCounter(stdio, "events", eventsProgressEvery)
			defer progress.done()
			if r, err := s.GetRun(ctx, args[0]); err == nil && r.Kind == fleet.Kind {
				var from *fleet.Cursor
				if after != "" {
					if err := checkText("--after", after); err != nil {
						return err
					}
					c, err := fleet.ParseCursor(after)
					if err != nil {
						return usage("%v", err)
					}
					from = &c
				}
				return printFleetEvents(ctx, stdio, s, args[0], from, follow, asJSON, progress)
			}
			if err := checkText("--after", after); err != nil {
				return err
			}
			if _, err := store.ParseCursor(after); err != nil {
				return usage("--after %s is not a cursor of run %s's events: give one agentrt runs events printed (--json shows each event's cursor)", quoteShort(after), args[0])
			}
			cursor := after
			for {
				events, err := s.Events(ctx, args[0], cursor, 500)
				if errors.Is(err, store.ErrNotFound) {
					return noStoredRun(args[0])
				}
				if err != nil {
					return &exitError{code: ExitFailed, err: err}
				}
				for _, e := range events {
					printEvent(stdio.Out, e, asJSON, nil)
					cursor = e.Cursor
				}
				progress.add(len(events))
				if len(events) == 500 {
					continue
				}
				if !follow {
					return nil
				}
				r, err := s.GetRun(ctx, args[0])
				if err != nil {
					return &exitError{code: ExitFailed, err: err}
				}
				if r.Status.Terminal() {
					// One last read: events appended just before the end.
					if tail, err := s.Events(ctx, args[0], cursor, 0); err == nil && len(tail) > 0 {
						continue
					}
					return nil
				}
				select {
				case <-ctx.Done():
					return nil
				case <-time.After(200 * time.Millisecond):
				}
			}
		},
	}
	sf.register(cmd)
	cmd.Flags().BoolVar(&asJSON, "json", false, "print one JSON object per event")
	cmd.Flags().BoolVar(&follow, "follow", false, "keep printing new events until the run ends")
	cmd.Flags().StringVar(&after, "after", "", "print only events after this cursor")
	return cmd
}

// printEvent writes one event: a line for people, or a JSON object
// (with extra members first, as a fleet run's attempt).
func printEvent(w io.Writer, e store.Event, asJSON bool, extra []canonjson.Member) {
	if asJSON {
		line := canonjson.ObjectValue(append(extra, []canonjson.Member{
			{Name: "sequence", Value: canonjson.NumberValue(float64(e.Sequence))},
			{Name: "cursor", Value: canonjson.StringValue(e.Cursor)},
			{Name: "id", Value: canonjson.StringValue(e.ID)},
			{Name: "type", Value: canonjson.StringValue(e.Type)},
			{Name: "time", Value: canonjson.StringValue(e.Time.UTC().Format(time.RFC3339Nano))},
			{Name: "event", Value: e.Body},
		}...))
		machine(w).Write(append(canonjson.Marshal(line), '\n'))
		return
	}
	fmt.Fprintf(w, "%4d  %s  %-24s %s\n", e.Sequence, e.Time.Local().Format("15:04:05.000"), e.Type, eventText(e.Body))
}

// printFleetEvents prints a fleet run's events: its attempts', attempt
// after attempt (fleet.Follow), each JSON line naming its attempt, each
// attempt introduced by a line for people.
func printFleetEvents(ctx context.Context, stdio IO, s store.Store, runID string, after *fleet.Cursor, follow, asJSON bool, progress *counter) error {
	shown := ""
	for e, err := range fleet.Follow(ctx, s, runID, fleet.FollowOptions{Follow: follow, After: after}) {
		if ce := (*fleet.CursorError)(nil); errors.As(err, &ce) {
			return usage("%v", err)
		}
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			if se := (*fleet.StalledError)(nil); errors.As(err, &se) && se.Cursor != "" {
				err = fmt.Errorf("%w (agentrt runs events %s --follow --after %s)", err, runID, se.Cursor)
			}
			return &exitError{code: ExitFailed, err: err}
		}
		if e.Attempt != shown && !asJSON {
			fmt.Fprintf(stdio.Out, "attempt %d (run %s)\n", e.Generation, e.Attempt)
		}
		shown = e.Attempt
		// The cursor printed is the fleet run's (its attempt's generation
		// and the event's cursor there), which --after takes back.
		ev := e.Event
		ev.Cursor = e.FleetCursor().String()
		printEvent(stdio.Out, ev, asJSON, []canonjson.Member{
			{Name: "attempt", Value: canonjson.StringValue(e.Attempt)},
			{Name: "generation", Value: canonjson.NumberValue(float64(e.Generation))},
		})
		progress.add(1)
	}
	return nil
}

// eventText is a one-line rendering of an event body.
func eventText(body canonjson.Value) string {
	for _, name := range []string{"text", "delta", "message", "error"} {
		if v, ok := body.Get(name); ok && v.Kind() == canonjson.String {
			s := strings.ReplaceAll(v.Str(), "\n", " ")
			if len(s) > 100 {
				s = s[:97] + "..."
			}
			return s
		}
	}
	s := string(canonjson.Marshal(body))
	if len(s) > 100 {
		s = s[:97] + "..."
	}
	return s
}
