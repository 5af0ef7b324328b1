package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/graph"
	"github.com/agentrt/agentrt/profile"
	"github.com/agentrt/agentrt/providers/scripted"
	"github.com/agentrt/agentrt/supervise"
)

func newGraphCmd(stdio IO, open providerOpener) *cobra.Command {
	var sf storeFlags
	var asJSON, resume bool
	var task, providerName, scriptPath, managerScript, baseURL, openaiAPI, expect, runDir, runID, directivesPath, analystsPath string
	var timeout time.Duration
	cmd := &cobra.Command{
		Use:   "graph FILE --task TEXT --directives FILE [--run-dir DIR [--resume]]",
		Short: "Run a fixed agent topology from a JSON graph under one conserved budget",
		Long: `Run the graph in FILE (or - for stdin): nodes are profiles (name = id), edges
are delegates and analyzes edges naming their directives by handle, and its
budget is the one conserved pool (see package graph). An analyzes edge's
analyst is a node or a lens: a built-in one or one of --analysts FILE. --directives FILE is a
JSON object of the edges' directive text by handle. The root node is the
manager; it runs as agentrt supervise's manager does (--manager-script with
the scripted provider, without one a plan that delegates once along each of
the root's delegates edges and awaits), the workers on --provider. The
deliverable is a result that contains --expect TEXT (without --expect: one
that is not empty).

The run's journal lives in --run-dir DIR (a fresh temporary directory when
not given). --resume continues the graph run DIR journals after its process
died: give the same graph, directives and --task; settled nodes and
completed analyses are replayed from the journal, not run again, and the
edge ledger and traversal caps carry on where they stopped.

Progress shows on stderr; the result, with every edge traversal, on stdout,
or as JSON with --json.

With OTEL_EXPORTER_OTLP_ENDPOINT set, the graph's supervised run is traced
over OTLP/HTTP as agentrt supervise's is.

Exit status: 0 when the run has a winner, 1 when it has none (or the graph
is invalid), 2 on usage errors.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			if strings.TrimSpace(task) == "" {
				return usage("--task is required")
			}
			if directivesPath == "" {
				return usage("--directives is required")
			}
			if resume && runDir == "" {
				return usage("--resume needs --run-dir, the directory of the graph run to continue")
			}
			if managerScript != "" && providerName != "scripted" {
				return usage("--manager-script applies to --provider scripted only")
			}
			data, err := readInput(stdio, args[0])
			if err != nil {
				return err
			}
			g, err := graph.Decode(data)
			if err != nil {
				return &exitError{code: ExitFailed, err: err}
			}
			g.Deliverable = expectDeliverable(expect)
			dirData, err := readInput(stdio, directivesPath)
			if err != nil {
				return err
			}
			var directives map[string]string
			if err := json.Unmarshal(dirData, &directives); err != nil {
				return &exitError{code: ExitFailed, err: fmt.Errorf("%s: %w", directivesPath, err)}
			}
			reg, err := graph.NewRegistry(directives)
			if err != nil {
				return &exitError{code: ExitFailed, err: err}
			}
			lenses, err := readAnalysts(stdio, analystsPath)
			if err != nil {
				return err
			}
			root, targets := graphRoot(g)
			router, err := routerModel(providerName, managerScript, baseURL, openaiAPI, root, targets, task)
			if err != nil {
				return err
			}
			if providerName == "scripted" && managerScript == "" {
				// The default plan also awaits the findings of the
				// analyzes edges over the nodes it delegates to, so their
				// analysts are not cancelled by the root's return.
				router = scripted.NewChatModel(defaultPlanAwaiting(targets, len(targets)+findingsOver(g, targets), task))
			}
			provider, err := open(providerName, scriptPath, baseURL, openaiAPI)
			if err != nil {
				return err
			}
			s, err := sf.open(ctx)
			if err != nil {
				return err
			}
			defer s.Close()
			if runDir == "" {
				if runDir, err = os.MkdirTemp("", "agentrt-graph-"); err != nil {
					return &exitError{code: ExitFailed, err: err}
				}
			}
			if timeout > 0 {
				var cancel context.CancelFunc
				ctx, cancel = context.WithTimeout(ctx, timeout)
				defer cancel()
			}
			tracing := startTracing(ctx, stdio)
			defer stopTracing(ctx, stdio, tracing)
			prog := startProgress(ctx, stdio.Err, runDir, resume)
			res, err := graph.RunGraph(ctx, g, graph.Options{Task: task, Registry: reg, Supervise: supervise.Options{
				Executor: &supervise.KernelExecutor{Provider: provider, Store: s},
				Router:   router, RunDir: runDir, RunID: runID, Resume: resume, Analysts: lenses,
				Observer: tracing.SuperviseObserver(),
			}})
			prog.stop()
			var capErr *graph.GraphEdgeCapError
			if errors.As(err, &capErr) {
				res = graph.GraphResult{Result: capErr.Result, Ledger: capErr.Ledger, ExhaustedEdges: capErr.ExhaustedEdges, RunID: capErr.Result.RunID}
			} else if err != nil {
				var ce *graph.ConfigError
				if errors.As(err, &ce) {
					return usage("%v", err)
				}
				var exists *supervise.RunExistsError
				if errors.As(err, &exists) {
					return &exitError{code: ExitFailed, err: fmt.Errorf("%w (add --resume to continue it, or choose another --run-dir)", err)}
				}
				return &exitError{code: ExitFailed, err: err}
			}
			if asJSON {
				v := supervisedValue(res.Result, runDir)
				lv, err := canonjson.ToValue(res.Ledger)
				if err != nil {
					return err
				}
				if res.Ledger == nil {
					lv = canonjson.ArrayValue(nil)
				}
				ex := make([]canonjson.Value, len(res.ExhaustedEdges))
				for i, e := range res.ExhaustedEdges {
					ex[i] = canonjson.StringValue(e)
				}
				v = v.With("ledger", lv).With("exhaustedEdges", canonjson.ArrayValue(ex))
				if err := writeJSON(stdio.Out, v); err != nil {
					return err
				}
			} else {
				printSupervised(stdio.Out, res.Result, runDir)
				for _, row := range res.Ledger {
					fmt.Fprintf(stdio.Out, "  edge      %s #%d %s, %d bytes%s\n", row.Edge, row.Traversal, row.Outcome, row.Bytes, detail(row.Reason))
				}
				if capErr != nil {
					fmt.Fprintf(stdio.Out, "  exhausted %s\n", strings.Join(res.ExhaustedEdges, ", "))
				}
			}
			if res.Result.Status != supervise.StatusWinner {
				return refused()
			}
			return nil
		},
	}
	sf.register(cmd)
	f := cmd.Flags()
	f.StringVar(&task, "task", "", "the root's task (required)")
	f.StringVar(&directivesPath, "directives", "", "JSON object of the edges' directive text by handle (required)")
	f.StringVar(&providerName, "provider", "scripted", "provider the workers (and, for openai and anthropic, the root) run on")
	f.StringVar(&baseURL, "base-url", "", "the model endpoint of the provider (default: the vendor's)")
	f.StringVar(&openaiAPI, "openai-api", "", "the wire protocol of the openai provider: chat-completions or responses")
	f.StringVar(&scriptPath, "script", "", "script for the workers' scripted provider (default: answer every task)")
	f.StringVar(&managerScript, "manager-script", "", "script of the root's scripted model (see agentrt supervise --help)")
	f.StringVar(&expect, "expect", "", "deliver only a result that contains this text")
	f.StringVar(&runDir, "run-dir", "", "directory of the run's journal (default: a new temporary directory)")
	f.BoolVar(&resume, "resume", false, "continue the graph run journaled in --run-dir")
	f.StringVar(&analystsPath, "analysts", "", analystsFlagUsage+"; an analyzes edge names a lens by id")
	f.StringVar(&runID, "run-id", "", "the run's id (default: generated)")
	f.DurationVar(&timeout, "timeout", 0, "give up after this long (the run ends cancelled)")
	f.BoolVar(&asJSON, "json", false, "print the result as JSON")
	return cmd
}

// findingsOver counts the analyzes traversals one settle of each target
// fires.
func findingsOver(g graph.Graph, targets []string) int {
	n := 0
	for _, e := range g.Edges {
		if e.Kind != graph.Analyzes {
			continue
		}
		for _, over := range e.Over {
			if slices.Contains(targets, over) {
				n++
			}
		}
	}
	return n
}

// graphRoot is the graph's root node's profile (the source of its
// delegates edges) and the nodes it delegates to.
func graphRoot(g graph.Graph) (*profile.Profile, []string) {
	rootID := ""
	var targets []string
	for _, e := range g.Edges {
		if e.Kind != graph.Delegates {
			continue
		}
		if rootID == "" {
			rootID = e.From
		}
		if e.From == rootID {
			targets = append(targets, e.To)
		}
	}
	for _, n := range g.Nodes {
		if n.ID == rootID && n.Profile != nil {
			return n.Profile, targets
		}
	}
	return &profile.Profile{}, targets
}
