//go:build ignore

// gen_exposure writes exposure_gen.go (into the directory its argument
// names, else the current one): for every combination of the
// optional abilities below that a valid capability document can declare,
// one type whose method set is exactly that combination, and the switch
// that picks the type for a capability document. Go method sets are
// static, so the exposure rule (an optional method is present exactly
// when its capability is declared) needs a type per combination; this
// table is the one place an ability is added.
//
// The combinations are many (hundreds for an environment), so each costs
// as little compiled code as Go allows. A combination is a struct of
// value fields whose methods all have pointer receivers: the base's
// exported surface and one carrier per ability. Only the pointer to it
// has methods, so the compiler writes one wrapper per method, not one for
// the struct and another for its pointer, and the base's unexported
// methods are never promoted.
package main

import (
	"bytes"
	"fmt"
	"go/format"
	"os"
	"path/filepath"
	"strings"
)

// ability is one optional interface of the contract that remote offers.
type ability struct {
	Name    string   // the contract interface
	Short   string   // its part of a generated type name
	Gate    string   // the Go condition on c *contract.Capabilities that declares it
	Methods []method // the interface's methods
	// Implies are the Shorts of the abilities whose gates this one's gate
	// implies; a mask with this ability and without one of those cannot
	// occur, so no type is generated for it. Only a gate's own logic
	// counts here, never a cross-field rule of the document (durable
	// branching needs checkpoint and fork, CAP-11): the exposure holds
	// for every document, validated or not.
	Implies []string
}

// method is one method of an ability.
type method struct {
	Sig  string // the method, as declared
	Call string // the body, calling the base type's unexported method
}

// one is an ability of a single method.
func one(name, short, gate, sig, call string) ability {
	return ability{Name: name, Short: short, Gate: gate, Methods: []method{{sig, call}}}
}

var envAbilities = []ability{
	implies(one("Dispatcher", "Dispatch", "c.Streaming.Detach",
		"Dispatch(ctx context.Context, in *contract.TurnInput) (*contract.SessionRef, error)", "return x.dispatch(ctx, in)"), "Sessions"),
	one("SessionOpener", "Sessions", "c.Streaming.Detach || c.Streaming.Replay || c.Sessions.Continue",
		"Session(ctx context.Context, id string, ref *contract.RunControlRef) (contract.Session, error)", "return x.session(ctx, id, ref)"),
	one("InteractionResponder", "Interact", "c.Interactions != nil",
		"RespondToInteraction(ctx context.Context, cmd *contract.InteractionResponseCommand) (*contract.InteractionAcknowledgement, error)", "return x.respond(ctx, cmd)"),
	one("Observer", "Observe", "c.Observation != nil",
		"Observe(ctx context.Context) (*contract.EnvironmentObservation, error)", "return x.observe(ctx)"),
	one("WorkspaceReader", "Read", "c.Workspace.Read",
		"ReadFile(ctx context.Context, path, sessionID string) (string, error)", "return x.readFile(ctx, path, sessionID)"),
	one("WorkspaceWriter", "Write", "c.Workspace.Write",
		"WriteFile(ctx context.Context, path, content, sessionID string) error", "return x.writeFile(ctx, path, content, sessionID)"),
	one("LegacyCheckpointer", "Checkpoint", "c.Branching.Checkpoint",
		"Checkpoint(ctx context.Context, req *contract.CheckpointRequest) (*contract.CheckpointRef, error)", "return x.checkpoint(ctx, req)"),
	one("LegacyForker", "Fork", "c.Branching.Fork",
		"Fork(ctx context.Context, from *contract.CheckpointRef, req *contract.ForkRequest) (contract.Environment, error)", "return x.fork(ctx, from, req)"),
	one("DurableBrancher", "Durable", "c.Branching.Durable()",
		"WorkspaceBranching() contract.WorkspaceBranching", "return x.workspaceBranching()"),
	one("CommandExecutor", "Exec", "c.Workspace.Exec",
		"Exec(ctx context.Context, command string, req *contract.ExecRequest) (*contract.ExecResult, error)", "return x.exec(ctx, command, req)"),
}

// envCore is contract.Environment and contract.OwnedStreamer, the surface every exposed environment
// offers; *environment implements it.
var envCore = []method{
	{"ID() string", "return x.ID()"},
	{"Provider() string", "return x.Provider()"},
	{"Name() string", "return x.Name()"},
	{"Creation() contract.Creation", "return x.Creation()"},
	{"Metadata() map[string]canonjson.Value", "return x.Metadata()"},
	{"Capabilities() *contract.Capabilities", "return x.Capabilities()"},
	{"Status(ctx context.Context) (contract.EnvironmentStatus, error)", "return x.Status(ctx)"},
	{"Stream(ctx context.Context, in *contract.TurnInput) iter.Seq2[contract.EnvironmentEvent, error]", "return x.Stream(ctx, in)"},
	{"Destroy(ctx context.Context) error", "return x.Destroy(ctx)"},
	{"StreamOwned(ctx context.Context, in *contract.TurnInput) iter.Seq2[contract.EnvironmentEvent, error]", "return x.StreamOwned(ctx, in)"},
	{"AttachTurn(ctx context.Context, in *contract.TurnInput) iter.Seq2[contract.EnvironmentEvent, error]", "return x.AttachTurn(ctx, in)"},
}

// elsewhere names the interface a core method implements when it is not
// the core's own (the execution owner's stream, which carries the
// private native-session observation, NSO-01).
var elsewhere = map[string]string{"StreamOwned": "contract.OwnedStreamer", "ObservedNativeSession": "contract.NativeSessionReporter", "AttachTurn": "TurnAttacher"}

// sessCore is contract.Session and contract.NativeSessionReporter (a
// detached run's native session, NSO-02), the surface every exposed
// session offers; *session implements it.
var sessCore = []method{
	{"ID() string", "return x.ID()"},
	{"ControlRef() *contract.RunControlRef", "return x.ControlRef()"},
	{"Status(ctx context.Context) (contract.SessionStatus, bool, error)", "return x.Status(ctx)"},
	{"Events(ctx context.Context, since, executionID string) iter.Seq2[contract.EnvironmentEvent, error]", "return x.Events(ctx, since, executionID)"},
	{"Result(ctx context.Context) (*contract.TurnResult, error)", "return x.Result(ctx)"},
	{"Prompt(ctx context.Context, in *contract.TurnInput) (*contract.TurnResult, error)", "return x.Prompt(ctx, in)"},
	{"Cancel(ctx context.Context) error", "return x.Cancel(ctx)"},
	{"ObservedNativeSession(ctx context.Context) (*contract.NativeSessionObserved, bool, error)", "return x.ObservedNativeSession(ctx)"},
}

var providerAbilities = []ability{
	one("BranchingProvider", "Branching", "c.Branching.Durable()",
		"BranchingFor(ctx context.Context, sourceEnvironmentID string) (contract.WorkspaceBranching, error)", "return x.branchingFor(ctx, sourceEnvironmentID)"),
	{Name: "ContextTransferrer", Short: "Transfer", Gate: "c.ContextTransfer != nil", Methods: []method{
		{"TransferContext(ctx context.Context, req *contract.ContextTransferRequest) (*contract.ContextTransferResult, error)", "return x.transferContext(ctx, req)"},
		{"LookupContextTransfer(ctx context.Context, req *contract.ContextTransferRequest) (*contract.ContextTransferResult, error)", "return x.lookupContextTransfer(ctx, req)"}}},
	one("ExactProcessHost", "Exact", "c.ExactProcess != nil",
		"ExactProcess() contract.ExactProcessProvider", "return x.exactProcess()"),
	one("ProfileValidator", "Validate", "c.Profile.Validation",
		"ValidateProfile(ctx context.Context, ref profile.Ref) (*contract.ProfileValidation, error)", "return x.validateProfile(ctx, ref)"),
}

var sessionAbilities = []ability{
	{Name: "NativeContinuer", Short: "Native", Gate: "c.NativeContinuation != nil", Methods: []method{
		{"ContextBoundary(ctx context.Context) (*contract.NativeContextBoundaryProof, error)", "return x.contextBoundary(ctx)"},
		{"ContinueNative(ctx context.Context, req *contract.NativeContextContinuationRequest, opts contract.NativeContinuationOptions) (*contract.NativeContinuationResult, error)",
			"return x.continueNative(ctx, req, opts)"}}},
	one("RunCanceller", "CancelRun", "c.RetainedControl != nil",
		"CancelRun(ctx context.Context, req *contract.RunCancellationRequest) (*contract.RunCancellationAcknowledgement, error)", "return x.cancelRun(ctx, req)"),
	one("InteractionResponder", "Interact", "c.Interactions != nil",
		"RespondToInteraction(ctx context.Context, cmd *contract.InteractionResponseCommand) (*contract.InteractionAcknowledgement, error)", "return x.respond(ctx, cmd)"),
}

func main() {
	var b bytes.Buffer
	b.WriteString("// Code generated by gen_exposure.go; DO NOT EDIT.\n\npackage remote\n\n")
	b.WriteString("import (\n\t\"context\"\n\t\"iter\"\n\n\t\"github.com/agentrt/agentrt/contract\"\n\t\"github.com/agentrt/agentrt/canonjson\"\n\t\"github.com/agentrt/agentrt/profile\"\n)\n\n")
	// A remote provider's exported surface is more than contract.Provider
	// (Get, Effects, …) and its combinations are few: they embed it.
	gen(&b, "prov", "*Provider", nil, "contract.Provider", providerAbilities)
	gen(&b, "env", "*environment", envCore, "contract.Environment", envAbilities)
	gen(&b, "sess", "*session", sessCore, "contract.Session", sessionAbilities)
	out, err := format.Source(b.Bytes())
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Stdout.Write(b.Bytes())
		os.Exit(1)
	}
	path := "exposure_gen.go"
	if len(os.Args) > 1 {
		path = filepath.Join(os.Args[1], path)
	}
	if err := os.WriteFile(path, out, 0o644); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

// gen writes prefix's mask function, its switch, one carrier per ability
// and one type per possible combination. A combination embeds the base
// itself when core is nil, else prefix+"Base": a carrier of core, the
// base's exported surface.
func gen(b *bytes.Buffer, prefix, base string, core []method, iface string, abilities []ability) {
	fmt.Fprintf(b, "// %sMask is the set of optional abilities c declares for a %s, one\n// bit per ability in the order of gen_exposure.go's table.\n", prefix, iface)
	fmt.Fprintf(b, "func %sMask(c *contract.Capabilities) uint {\n\tvar m uint\n", prefix)
	for i, a := range abilities {
		fmt.Fprintf(b, "\tif %s {\n\t\tm |= 1 << %d\n\t}\n", a.Gate, i)
	}
	b.WriteString("\treturn m\n}\n\n")

	head := "x"
	embed := base
	if core != nil {
		embed = prefix + "Base"
		head = embed + "{x}"
	}
	fmt.Fprintf(b, "// %sExposed returns x as the type that implements exactly the\n// abilities of mask.\n", prefix)
	fmt.Fprintf(b, "func %sExposed(x %s, mask uint) %s {\n\tswitch mask {\n", prefix, base, iface)
	for m := 1; m < 1<<len(abilities); m++ {
		if !possible(abilities, m) {
			continue
		}
		fields := []string{head}
		for i, a := range abilities {
			if m&(1<<i) != 0 {
				fields = append(fields, carrier(prefix, a)+"{x}")
			}
		}
		fmt.Fprintf(b, "\tcase %d:\n\t\treturn &%s{%s}\n", m, typeName(prefix, abilities, m), strings.Join(fields, ", "))
	}
	b.WriteString("\t}\n\treturn x\n}\n\n")
	if core != nil {
		fmt.Fprintf(b, "// %s carries the methods of %s, the surface every\n// exposed type offers.\ntype %s struct{ x %s }\n\n", embed, iface, embed, base)
		methods(b, embed, iface, core)
	}
	// One carrier per ability holds its methods; a combination embeds
	// the carriers of its abilities, so each combination costs one line,
	// not a copy of every method.
	for _, a := range abilities {
		name := carrier(prefix, a)
		fmt.Fprintf(b, "// %s carries the methods of contract.%s.\ntype %s struct{ x %s }\n\n", name, a.Name, name, base)
		methods(b, name, "contract."+a.Name, a.Methods)
	}
	for m := 1; m < 1<<len(abilities); m++ {
		if !possible(abilities, m) {
			continue
		}
		var names, carriers []string
		for i, a := range abilities {
			if m&(1<<i) != 0 {
				names = append(names, a.Name)
				carriers = append(carriers, carrier(prefix, a))
			}
		}
		name := typeName(prefix, abilities, m)
		fmt.Fprintf(b, "// %s offers %s.\ntype %s struct {\n\t%s\n\t%s\n}\n\n", name, strings.Join(names, ", "), name, embed, strings.Join(carriers, "\n\t"))
	}
}

// methods writes the pointer-receiver methods of carrier type name, each
// calling the base x it holds. They are not inlined: every combination
// has a compiler-written wrapper per method, and a wrapper that only
// calls costs the compiler a fraction of one that copies the body of the
// base's method into each of hundreds of types; a remote call behind it
// dwarfs the extra call.
func methods(b *bytes.Buffer, name, iface string, ms []method) {
	for _, f := range ms {
		m := f.Sig[:strings.IndexByte(f.Sig, '(')]
		implements := iface
		if other, ok := elsewhere[m]; ok {
			implements = other
		}
		fmt.Fprintf(b, "// %s implements %s.\n//\n//go:noinline\n", m, implements)
		fmt.Fprintf(b, "func (e *%s) %s {\n\tx := e.x\n\t%s\n}\n\n", name, f.Sig, f.Call)
	}
}

// index is the position of the ability whose Short is short.
func index(abilities []ability, short string) int {
	for i, a := range abilities {
		if a.Short == short {
			return i
		}
	}
	panic("gen_exposure: no ability " + short)
}

// implies returns a with Implies set to shorts.
func implies(a ability, shorts ...string) ability {
	a.Implies = shorts
	return a
}

// possible reports whether mask m can come from a document: every
// ability in it comes with the abilities its gate implies.
func possible(abilities []ability, m int) bool {
	for i, a := range abilities {
		if m&(1<<i) == 0 {
			continue
		}
		for _, short := range a.Implies {
			if m&(1<<index(abilities, short)) == 0 {
				return false
			}
		}
	}
	return true
}

// carrier is the name of the type that carries a's methods.
func carrier(prefix string, a ability) string { return prefix + "With" + a.Short }

func typeName(prefix string, abilities []ability, m int) string {
	name := prefix
	for i, a := range abilities {
		if m&(1<<i) != 0 {
			name += a.Short
		}
	}
	return name
}
