package cli

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/agentrt/agentrt/supervise"
)

// resolveRunDir names a supervised run's directory: run itself when it
// is a directory, else the directory of run id run in the workspace
// (supervise.RunDirIn), refused when it records another run.
func resolveRunDir(run, workspace string) (string, error) {
	if fi, err := os.Stat(run); err == nil && fi.IsDir() {
		return run, nil
	}
	// An id that is not UTF-8 or holds a control character names no
	// run (the CLI never starts one so).
	if err := checkName("RUN", run, "give the run's directory or its id"); err != nil {
		return "", err
	}
	dir := supervise.RunDirIn(workspace, run)
	if fi, err := os.Stat(dir); err == nil && fi.IsDir() {
		// The directory names its run (state.json, else the journal's
		// run-started): one that holds another run is not run's.
		other := ""
		if st, err := supervise.ReadRunState(context.Background(), dir); err == nil {
			other = st.RunID
		} else if first, err := supervise.ReadRunStarted(context.Background(), supervise.Options{RunDir: dir}); err == nil {
			other = first.RunID
		}
		if other != "" && other != run {
			return "", usage("%s is the directory of run %q, not of run %q: give the id of the run you mean, or its directory", dir, other, run)
		}
		return dir, nil
	} else if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return "", &exitError{code: ExitFailed, err: fmt.Errorf("reading run %s's directory: %w (check its permissions)", run, err)}
	}
	if fi, err := os.Stat(run); err == nil && !fi.IsDir() {
		return "", usage("%s is a file, not a run directory: %s", run, runDirHint)
	}
	return "", usage("%s is neither a run directory nor the id of a run in %s (its directory would be %s): %s", run, workspace, dir, runDirHint)
}

// runDirHint says what names a supervised run, for a RUN that names none.
const runDirHint = "give the run's directory (WORKSPACE/.agent/supervisor/RUN-ID, printed as \"run dir\" by agentrt supervise and agentrt graph) or its id with --workspace WORKSPACE"

// runDirMarkers are the files a supervised run keeps in its directory
// from its start (the lock while it runs, its state and progress, its
// journal — or its coordination log when the journal is kept in the
// store — and the manager's stream): a directory holding none of them
// holds no run.
var runDirMarkers = []string{supervise.LockFile, supervise.StateFile, supervise.SpawnJournalFile, supervise.CoordinationLogFile, supervise.ProgressFile, supervise.RootStreamFile}

// checkRunDir refuses, as a usage error, a steer or cancel aimed at dir
// when dir is no supervised run's directory: one that does not exist, a
// file, or a directory holding none of runDirMarkers (a typo'd path that
// happens to exist, a workspace given for its run). Nothing is written
// then, and nothing waits --wait for a supervisor that cannot be there.
func checkRunDir(dir string) error {
	fi, err := os.Stat(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return usage("%s: no such run directory: %s", dir, runDirHint)
	case err != nil:
		return &exitError{code: ExitFailed, err: fmt.Errorf("reading run directory %s: %w (check its permissions)", dir, err)}
	case !fi.IsDir():
		return usage("%s is a file, not a run directory: %s", dir, runDirHint)
	}
	for _, m := range runDirMarkers {
		if _, err := os.Lstat(filepath.Join(dir, m)); err == nil {
			return nil
		}
	}
	return usage("%s holds no supervised run (none of %s in it): %s", dir, strings.Join(runDirMarkers, ", "), runDirHint)
}

// defaultOperationID derives a request's operation id from what it asks,
// so that running the same command again is a retry of the same request.
func defaultOperationID(kind string, parts ...string) string {
	h := sha256.New()
	for _, p := range parts {
		h.Write([]byte(p))
		h.Write([]byte{0})
	}
	return kind + "-" + hex.EncodeToString(h.Sum(nil))[:16]
}

// workerTarget is what a default operation id names for worker in run
// dir: the node the reference reaches now, so that a later worker under
// a reused label gets a request of its own rather than the earlier
// worker's answer; the reference itself when the run's progress does not
// resolve it (the run id, a worker not spawned yet).
func workerTarget(ctx context.Context, dir, worker string) string {
	if worker == "" {
		return ""
	}
	if id, ok, err := supervise.ResolveWorker(ctx, dir, worker); err == nil && ok {
		return string(id)
	}
	return worker
}

func newSteerCmd(stdio IO) *cobra.Command {
	var opID, workspace string
	var interrupt, asJSON bool
	var wait time.Duration
	cmd := &cobra.Command{
		Use: "steer RUN WORKER MESSAGE",
		Example: `  agentrt steer notes-1 note-writer "Keep it under ten words."
  agentrt steer .agent/supervisor/notes-1 notes-1:s1 "Stop and summarise." --interrupt --json`,
		Short: "Deliver a message to a worker of a running supervised or graph run",
		Long: `Deliver MESSAGE to WORKER of the supervised or graph run RUN while it
runs, from any process: agentrt supervise steer with the message as an
argument. RUN is the run's directory or its id in --workspace
(WORKSPACE/.agent/supervisor/RUN). WORKER is a worker id, a direct child's
label or profile name, or the run id for the manager (a router manager takes
it before its next model call, a claude-code, codex or opencode manager with
its next coordination tool result; a kernel worker takes it as its next
turn's input). The operation id defaults to one derived from the worker WORKER
names now (a reused label names its newest worker) and MESSAGE, so running
the same command again retries the same request (and shows its outcome);
pass --operation-id to send the same message once more.

Exit status: 0 when the acknowledgement says delivered, or with --wait 0
(the request is written and not waited for: "requested"), 1 for any other
acknowledgement or none within --wait (said on stderr), 2 on usage errors.`,
		Args: cobra.ExactArgs(3),
		RunE: func(cmd *cobra.Command, args []string) error {
			dir, err := resolveRunDir(args[0], workspace)
			if err != nil {
				return err
			}
			if args[2] == "" {
				return usage("MESSAGE is empty")
			}
			if err := checkRef("WORKER", args[1]); err != nil {
				return err
			}
			if err := checkText("MESSAGE", args[2]); err != nil {
				return err
			}
			if opID == "" {
				opID = defaultOperationID("steer", workerTarget(cmd.Context(), dir, args[1]), args[2])
			}
			return steerWorker(cmd.Context(), stdio, dir, args[1], args[2], opID, interrupt, wait, asJSON)
		},
	}
	cmd.Flags().StringVar(&opID, "operation-id", "", "the request's operation id, [A-Za-z0-9._-] (default: derived from the worker WORKER names now and MESSAGE)")
	cmd.Flags().StringVar(&workspace, "workspace", ".", "workspace root where RUN names a run by its id")
	cmd.Flags().BoolVar(&interrupt, "interrupt", false, "ask the worker to act on it at once")
	cmd.Flags().DurationVar(&wait, "wait", 10*time.Second, "how long to wait for the acknowledgement")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the request and acknowledgement as JSON")
	return cmd
}

func newCancelCmd(stdio IO) *cobra.Command {
	var rc runCancelFlags
	var opID, workspace, reason string
	var asJSON bool
	var wait time.Duration
	cmd := &cobra.Command{
		Use: "cancel RUN [WORKER]",
		Example: `  agentrt cancel notes-1 note-writer --reason "not needed"
  agentrt cancel .agent/supervisor/notes-1 --json`,
		Short: "Cancel a worker (and its subtree) of a running supervised or graph run, or the whole run",
		Long: `Cancel WORKER (and its subtree) of the supervised or graph run RUN, or
without WORKER the whole run, from any process: agentrt supervise cancel.
RUN is the run's directory or its id in --workspace
(WORKSPACE/.agent/supervisor/RUN). The operation id defaults to one derived
from the worker WORKER names now (a reused label names its newest worker)
or the run, so running the same command again retries the same request.

` + cancelWaitHelp,
		Args: cobra.RangeArgs(1, 2),
		RunE: func(cmd *cobra.Command, args []string) error {
			dir, err := resolveRunDir(args[0], workspace)
			if err != nil {
				return err
			}
			worker := ""
			if len(args) == 2 {
				worker = args[1]
			}
			if err := checkCancelArgs(worker, reason, rc); err != nil {
				return err
			}
			if opID == "" {
				opID = defaultOperationID("cancel", workerTarget(cmd.Context(), dir, worker))
			}
			return cancelWork(cmd.Context(), stdio, dir, worker, opID, reason, rc, wait, asJSON)
		},
	}
	rc.register(cmd)
	cmd.Flags().StringVar(&opID, "operation-id", "", "the request's operation id, [A-Za-z0-9._-] (default: derived from the worker WORKER names now, or the run)")
	cmd.Flags().StringVar(&workspace, "workspace", ".", "workspace root where RUN names a run by its id")
	cmd.Flags().StringVar(&reason, "reason", "", "why, recorded with the request")
	cmd.Flags().DurationVar(&wait, "wait", 10*time.Second, "how long to wait for the cancellation to be confirmed")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the acknowledgement as JSON")
	return cmd
}

// cancelWaitHelp is the --wait and exit-status text of agentrt cancel and
// agentrt supervise cancel, one request with two spellings.
const cancelWaitHelp = `With --wait 0 the request is written and not waited for: its effect is
cancel_requested (or the run's answer, when it already gave one). With
--wait D a cancellation the run did not confirm within D is unknown.

Exit status: 0 when the cancellation was confirmed (cancelled) or
requested with --wait 0 (cancel_requested), 1 otherwise: not_live (the
worker or run had already ended, so nothing was cancelled: never success,
as agentrt runs cancel and agentrt steer say too), or unknown (not
confirmed within --wait, said on stderr, or a worker the run never had,
finished run or not), 2 on usage errors.`
