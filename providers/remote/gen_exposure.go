//go:build ignore

// gen_exposure writes exposure_gen.go (into the directory its argument
// names, else the current one): for every combination of the
// optional abilities below, one type whose method set is exactly that
// combination, and the switch that picks the type for a capability
// document. Go method sets are static, so the exposure rule (an optional
// method is present exactly when its capability is declared) needs a type
// per combination; this table is the one place an ability is added.
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
	// Implies is the Short of an ability whose gate this one's gate
	// implies; a mask with this ability and without that one cannot
	// occur, so no type is generated for it.
	Implies string
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
	b.WriteString("import (\n\t\"context\"\n\n\t\"github.com/agentrt/agentrt/contract\"\n\t\"github.com/agentrt/agentrt/profile\"\n)\n\n")
	gen(&b, "prov", "*Provider", "contract.Provider", providerAbilities)
	gen(&b, "env", "*environment", "contract.Environment", envAbilities)
	gen(&b, "sess", "*session", "contract.Session", sessionAbilities)
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

func gen(b *bytes.Buffer, prefix, base, iface string, abilities []ability) {
	fmt.Fprintf(b, "// %sMask is the set of optional abilities c declares for a %s, one\n// bit per ability in the order of gen_exposure.go's table.\n", prefix, iface)
	fmt.Fprintf(b, "func %sMask(c *contract.Capabilities) uint {\n\tvar m uint\n", prefix)
	for i, a := range abilities {
		fmt.Fprintf(b, "\tif %s {\n\t\tm |= 1 << %d\n\t}\n", a.Gate, i)
	}
	b.WriteString("\treturn m\n}\n\n")
	fmt.Fprintf(b, "// %sExposed returns x as the type that implements exactly the\n// abilities of mask.\n", prefix)
	fmt.Fprintf(b, "func %sExposed(x %s, mask uint) %s {\n\tswitch mask {\n", prefix, base, iface)
	for m := 1; m < 1<<len(abilities); m++ {
		if !possible(abilities, m) {
			continue
		}
		fields := []string{"x"}
		for i, a := range abilities {
			if m&(1<<i) != 0 {
				fields = append(fields, carrier(prefix, a)+"{x}")
			}
		}
		fmt.Fprintf(b, "\tcase %d:\n\t\treturn %s{%s}\n", m, typeName(prefix, abilities, m), strings.Join(fields, ", "))
	}
	b.WriteString("\t}\n\treturn x\n}\n\n")
	// One carrier per ability holds its methods; a combination embeds
	// the base (its methods at depth 1) and the carriers of its
	// abilities, so each combination costs one line, not a copy of every
	// method.
	for _, a := range abilities {
		name := carrier(prefix, a)
		fmt.Fprintf(b, "// %s carries the methods of contract.%s.\ntype %s struct{ x %s }\n\n", name, a.Name, name, base)
		for _, f := range a.Methods {
			fmt.Fprintf(b, "// %s implements contract.%s.\n", f.Sig[:strings.IndexByte(f.Sig, '(')], a.Name)
			fmt.Fprintf(b, "func (e %s) %s {\n\tx := e.x\n\t%s\n}\n\n", name, f.Sig, f.Call)
		}
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
		fmt.Fprintf(b, "// %s offers %s.\ntype %s struct {\n\t%s\n\t%s\n}\n\n", name, strings.Join(names, ", "), name, base, strings.Join(carriers, "\n\t"))
	}
}

// implies returns a with Implies set to short.
func implies(a ability, short string) ability {
	a.Implies = short
	return a
}

// possible reports whether mask m can come from a document: every
// ability in it has the ability its gate implies.
func possible(abilities []ability, m int) bool {
	for i, a := range abilities {
		if m&(1<<i) == 0 || a.Implies == "" {
			continue
		}
		for j, b := range abilities {
			if b.Short == a.Implies && m&(1<<j) == 0 {
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
