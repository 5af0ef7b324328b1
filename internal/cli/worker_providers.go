package cli

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/agentrt/agentrt/contract"
	"github.com/agentrt/agentrt/coordmcp"
	"github.com/agentrt/agentrt/kernel"
	"github.com/agentrt/agentrt/store"
	"github.com/agentrt/agentrt/supervise"
)

// maxWorkerProviders bounds --worker-provider: one per node is plenty.
const maxWorkerProviders = 256

// workerProviderFlags are --worker-provider and its endpoint flags,
// shared by agentrt supervise and agentrt graph: the provider the
// workers run on when it is not the manager's --provider, for all of
// them or for one worker node (a graph node id, a supervise worker
// profile name).
type workerProviderFlags struct {
	specs              []string
	baseURL, openaiAPI string
}

func (f *workerProviderFlags) register(cmd *cobra.Command, node string) {
	fl := cmd.Flags()
	fl.StringArrayVar(&f.specs, "worker-provider", nil, "provider the workers run on instead of --provider (its values: scripted, openai, anthropic, claude-code, codex, opencode, remote), or "+
		strings.ToUpper(node)+"=PROVIDER for one "+node+" (repeatable; a "+node+" not named runs on the bare value, else on --provider)")
	fl.StringVar(&f.baseURL, "worker-base-url", "", "the endpoint of a --worker-provider that is not --provider (default: the vendor's; --base-url is --provider's)")
	fl.StringVar(&f.openaiAPI, "worker-openai-api", "", "the wire protocol of a --worker-provider openai that is not --provider: chat-completions or responses")
}

// workerProviders is what --worker-provider asked for: the provider of
// every worker ("" for --provider's) and of named nodes.
type workerProviders struct {
	all    string
	byNode map[string]string
}

// parse reads the flags' values; nodes are the names a NODE=PROVIDER
// value may give (what the flag's help calls its node), the manager
// never among them.
// providerNames are the providers a --provider or --worker-provider
// names (run.go's openProvider; its usage error lists the same).
var providerNames = []string{"scripted", "openai", "anthropic", "claude-code", "codex", "opencode", "remote"}

func (f workerProviderFlags) parse(nodes []string, node, manager string) (workerProviders, error) {
	wp := workerProviders{byNode: map[string]string{}}
	if len(f.specs) > maxWorkerProviders {
		return wp, usage("--worker-provider is given %d times; at most %d", len(f.specs), maxWorkerProviders)
	}
	for _, spec := range f.specs {
		name, provider, keyed := strings.Cut(spec, "=")
		if !keyed {
			name, provider = "", spec
		}
		switch {
		case strings.TrimSpace(provider) == "":
			return wp, usage("--worker-provider %q names no provider; give PROVIDER or %s=PROVIDER", spec, strings.ToUpper(node))
		case !keyed && slices.Contains(nodes, provider) && !slices.Contains(providerNames, provider):
			// The WORKER of WORKER=PROVIDER given alone.
			return wp, usage("--worker-provider %s names %s %q but no provider: give %s=PROVIDER (or PROVIDER alone for every %s)", spec, node, provider, provider, node)
		case !keyed && wp.all != "":
			return wp, usage("--worker-provider names the provider of every worker twice (%s and %s); give one, and %s=PROVIDER for the others", wp.all, provider, strings.ToUpper(node))
		case !keyed:
			wp.all = provider
		case name == manager && manager != "":
			return wp, usage("--worker-provider %s: %q is the manager, which runs on --provider's model", spec, name)
		case !slices.Contains(nodes, name):
			return wp, usage("--worker-provider %s: no %s %q (known: %s)", spec, node, name, strings.Join(nodes, ", "))
		case wp.byNode[name] != "":
			return wp, usage("--worker-provider names the provider of %s %q twice", node, name)
		default:
			wp.byNode[name] = provider
		}
	}
	return wp, nil
}

// providers opens each provider a command runs on once: the manager's
// --provider with --base-url and --openai-api, any other with the
// --worker-* endpoint flags.
type providers struct {
	open                     providerOpener
	primary, script          string
	baseURL, openaiAPI       string
	workerURL, workerOpenAPI string
	opened                   map[string]contract.Provider
	// accounts, when set (--seats), runs every worker whose profile has
	// seats through its seat chain (supervise.KernelExecutor.Accounts).
	accounts kernel.AccountManager
}

func newProviders(open providerOpener, primary, script, baseURL, openaiAPI string, wf workerProviderFlags) *providers {
	return &providers{open: open, primary: primary, script: script, baseURL: baseURL, openaiAPI: openaiAPI,
		workerURL: wf.baseURL, workerOpenAPI: wf.openaiAPI, opened: map[string]contract.Provider{}}
}

// get opens provider name, or returns the one opened before.
func (p *providers) get(name string) (contract.Provider, error) {
	if pr, ok := p.opened[name]; ok {
		return pr, nil
	}
	baseURL, api := p.workerURL, p.workerOpenAPI
	if name == p.primary {
		baseURL, api = p.baseURL, p.openaiAPI
	} else if name == "remote" && baseURL == "" {
		// Said here: openProvider would name --provider's flags.
		return nil, usage("--worker-provider remote needs --worker-base-url, the sidecar's address")
	}
	pr, err := p.open(name, p.script, baseURL, api)
	if err != nil {
		if name != p.primary {
			return nil, fmt.Errorf("--worker-provider %s: %w", name, err)
		}
		return nil, err
	}
	p.opened[name] = pr
	return pr, nil
}

// executor is the workers' executor: each worker runs through the kernel
// on its node's provider, recorded in s. Without --worker-provider it is
// one supervise.KernelExecutor on --provider, as before the flag.
func (p *providers) executor(wp workerProviders, s store.Store) (supervise.Executor, error) {
	if (p.workerURL != "" || p.workerOpenAPI != "") && !p.usesOther(wp) {
		return nil, usage("--worker-base-url and --worker-openai-api apply to a --worker-provider other than --provider %s", p.primary)
	}
	kernelOn := func(name string) (*supervise.KernelExecutor, error) {
		pr, err := p.get(name)
		if err != nil {
			return nil, err
		}
		return &supervise.KernelExecutor{Provider: pr, Store: s, Accounts: p.accounts}, nil
	}
	all := cmp.Or(wp.all, p.primary)
	def, err := kernelOn(all)
	if err != nil {
		return nil, err
	}
	byNode := map[string]*supervise.KernelExecutor{}
	for _, node := range slices.Sorted(maps.Keys(wp.byNode)) {
		name := wp.byNode[node]
		if name == all {
			continue
		}
		if byNode[node], err = kernelOn(name); err != nil {
			return nil, err
		}
	}
	if len(byNode) == 0 {
		return def, nil
	}
	return &nodeExecutor{def: def, byNode: byNode}, nil
}

// usesOther reports whether some worker runs on a provider that is not
// --provider (the one the --worker-* endpoint flags configure).
func (p *providers) usesOther(wp workerProviders) bool {
	if wp.all != "" && wp.all != p.primary {
		return true
	}
	for _, name := range wp.byNode {
		if name != p.primary {
			return true
		}
	}
	return false
}

// nodeExecutor runs each worker on its node's executor (the worker's
// profile name is its node), every other worker on def. All of them run
// through the kernel, so what the run asks of its executor (usage,
// inbox, runtime, trace) is def's answer for each.
type nodeExecutor struct {
	def    *supervise.KernelExecutor
	byNode map[string]*supervise.KernelExecutor
}

// Execute runs w on its node's executor.
func (e *nodeExecutor) Execute(ctx context.Context, w supervise.Work) (supervise.WorkResult, error) {
	if w.Profile != nil && w.Profile.Name != nil {
		if k, ok := e.byNode[*w.Profile.Name]; ok {
			return k.Execute(ctx, w)
		}
	}
	return e.def.Execute(ctx, w)
}

// ReportsUsage reports what every node's KernelExecutor reports.
func (e *nodeExecutor) ReportsUsage() bool { return e.def.ReportsUsage() }

// ReadsInbox reports what every node's KernelExecutor reports.
func (e *nodeExecutor) ReadsInbox() bool { return e.def.ReadsInbox() }

// Runtime is every node's runtime, supervise.RuntimeProvider.
func (e *nodeExecutor) Runtime() string { return e.def.Runtime() }

// PropagatesTrace reports what every node's KernelExecutor reports.
func (e *nodeExecutor) PropagatesTrace() bool { return e.def.PropagatesTrace() }

// ResumesSessions reports true only when every node's KernelExecutor
// does: a continuity-resume spawn of any node may then be honoured, and
// none is claimed on a provider that cannot continue its sessions.
func (e *nodeExecutor) ResumesSessions() bool {
	if !e.def.ResumesSessions() {
		return false
	}
	for _, k := range e.byNode {
		if !k.ResumesSessions() {
			return false
		}
	}
	return true
}

// ReleaseSessions releases the environments every node's KernelExecutor
// keeps for runID, and those of settled on its provider
// (supervise.SessionReleaser).
func (e *nodeExecutor) ReleaseSessions(ctx context.Context, runID string, settled map[supervise.NodeID]*supervise.SessionRef) []supervise.UnreleasedSession {
	out := e.def.ReleaseSessions(ctx, runID, settled)
	for _, node := range slices.Sorted(maps.Keys(e.byNode)) {
		out = append(out, e.byNode[node].ReleaseSessions(ctx, runID, settled)...)
	}
	return out
}

// ReleaseSessionTeardowns is ReleaseSessions reporting every environment
// released, destroyed or not (supervise.SessionTeardowns), so the run
// journals each as environment-teardown.
func (e *nodeExecutor) ReleaseSessionTeardowns(ctx context.Context, runID string, settled map[supervise.NodeID]*supervise.SessionRef) []supervise.SessionTeardown {
	out := e.def.ReleaseSessionTeardowns(ctx, runID, settled)
	for _, node := range slices.Sorted(maps.Keys(e.byNode)) {
		out = append(out, e.byNode[node].ReleaseSessionTeardowns(ctx, runID, settled)...)
	}
	return out
}

// peerMailWorkers refuses --peer-mail (§9) for workers that could not
// use it: each worker's send_mail and read_mail are served on a loopback
// endpoint of its own (coordmcp.MountPeerMail) mounted in the worker's
// harness, so only a harness CLI on this machine can reach and mount
// it. A worker provider that is not claude-code, codex or opencode, and
// --fleet (workers on other machines), are refused before anything
// runs: their workers would otherwise fail, or run without the mail
// the run offers them. The default provider (--worker-provider
// PROVIDER, else --provider) is held to it only when some worker of
// nodes (the --worker profiles' names) is not keyed to its own: a
// scripted or openai manager's --provider runs no worker then.
func (p *providers) peerMailWorkers(wp workerProviders, nodes []string, onFleet bool) error {
	if onFleet {
		return usage("--peer-mail serves each worker's mail on this machine's loopback: it cannot reach --fleet workers")
	}
	var used []string
	if wp.all != "" || slices.ContainsFunc(nodes, func(n string) bool { _, keyed := wp.byNode[n]; return !keyed }) {
		used = append(used, cmp.Or(wp.all, p.primary))
	}
	for _, node := range slices.Sorted(maps.Keys(wp.byNode)) {
		used = append(used, wp.byNode[node])
	}
	for _, name := range used {
		if !isHarnessProvider(name) {
			return usage("--peer-mail mounts each worker's mail as an MCP server in its harness: workers on %s cannot mount one (run them on claude-code, codex or opencode)", name)
		}
	}
	return nil
}

// mountPeerMail has every KernelExecutor of exec mount its workers'
// peer mail (supervise.KernelExecutor.PeerMailMount).
func mountPeerMail(exec supervise.Executor) error {
	switch e := exec.(type) {
	case *supervise.KernelExecutor:
		e.PeerMailMount = coordmcp.MountPeerMail
	case *nodeExecutor:
		e.def.PeerMailMount = coordmcp.MountPeerMail
		for _, k := range e.byNode {
			k.PeerMailMount = coordmcp.MountPeerMail
		}
	default:
		return fmt.Errorf("--peer-mail: the workers' executor %T cannot mount peer mail", exec)
	}
	return nil
}
