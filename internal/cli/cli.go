package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net"
	"os"
	"strconv"
	"strings"
	"syscall"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/agentrt/agentrt/contract"
)

// Exit codes.
const (
	ExitOK      = 0
	ExitFailed  = 1
	ExitUsage   = 2
	maxInputLen = 64 << 20
)

// IO is where a command reads and writes.
type IO struct {
	In       io.Reader
	Out, Err io.Writer
	// stdin, set for a command line's run (mainWith), records that a
	// file argument "-" already read In (readInput): a second one would
	// read nothing and be judged as an empty file.
	stdin *stdinUse
}

// stdinUse is whether a command line's standard input was read as a
// file argument "-".
type stdinUse struct{ read bool }

// exitError carries an exit code out of a command. A nil err means the
// command already reported what went wrong.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string {
	if e.err == nil {
		return fmt.Sprintf("exit %d", e.code)
	}
	return e.err.Error()
}

func (e *exitError) Unwrap() error { return e.err }

// refused ends a command with exit code 1 after it printed its verdict.
func refused() error { return &exitError{code: ExitFailed} }

// warnLogger is the logger of a command's libraries: their warnings and
// errors (what a run cannot return, such as a journal write it lost) as
// text lines on w, the command's stderr; nothing below warn.
func warnLogger(w io.Writer) *slog.Logger {
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: slog.LevelWarn}))
}

// usage ends a command with exit code 2.
func usage(format string, args ...any) error {
	return &exitError{code: ExitUsage, err: fmt.Errorf(format, args...)}
}

// Main runs the agentrt command line with args (without the program name)
// and returns the process exit code.
func Main(ctx context.Context, args []string, stdio IO) int {
	return mainWith(ctx, args, stdio, openProvider)
}

// providerOpener opens the provider a command runs on from its --provider,
// --script, --base-url and --openai-api flags.
type providerOpener func(name, scriptPath, baseURL, openaiAPI string) (contract.Provider, error)

// mainWith is Main with the providers of the run commands and of agentrt
// serve opened by open (tests share one scripted provider between
// invocations with it, as a provider outside the process would be
// shared, or watch what a served provider does).
func mainWith(ctx context.Context, args []string, stdio IO, open providerOpener) int {
	// Text for people is escaped for the terminal (termout.go): stderr
	// always, stdout unless the command prints for machines (--json).
	out, errw := newHumanWriter(stdio.Out), newHumanWriter(stdio.Err)
	defer errw.esc.Flush()
	defer out.esc.Flush()
	stdio = IO{In: stdio.In, Out: out, Err: errw, stdin: &stdinUse{}}
	root := newRoot(stdio, open)
	root.PersistentPreRun = func(cmd *cobra.Command, _ []string) {
		if f := cmd.Flags().Lookup("json"); f != nil && f.Value.String() == "true" {
			out.json = true
		}
	}
	root.SetArgs(args)
	root.SetIn(stdio.In)
	root.SetOut(stdio.Out)
	root.SetErr(stdio.Err)
	err := root.ExecuteContext(ctx)
	if err == nil {
		return ExitOK
	}
	var ee *exitError
	if errors.As(err, &ee) {
		if ee.err != nil {
			msg := ee.err.Error()
			if ee.code == ExitFailed {
				msg = withHint(ee.err)
			}
			fmt.Fprintln(stdio.Err, "agentrt:", msg)
		}
		return ee.code
	}
	// What is left is an error cobra raises itself before any command
	// runs (an unknown command): every command's own errors and its
	// argument checks are classified (classifyErrors).
	fmt.Fprintln(stdio.Err, "agentrt:", err)
	return ExitUsage
}

// classifyErrors gives every error a command of c's tree returns its exit
// status: an error of its argument check (Args) is a usage error, exit 2;
// any other error it returns that is not already an *exitError is a
// failure of the work, exit 1 — never a usage error by default. A usage
// error must be made one (usage, unreadable).
func classifyErrors(c *cobra.Command) {
	for _, sub := range c.Commands() {
		classifyErrors(sub)
	}
	if check := c.Args; check != nil {
		c.Args = func(cmd *cobra.Command, args []string) error {
			err := check(cmd, args)
			if err == nil || errors.As(err, new(*exitError)) {
				return err
			}
			return &exitError{code: ExitUsage, err: fmt.Errorf("%w (see %s --help)", err, cmd.CommandPath())}
		}
	}
	if run := c.RunE; run != nil {
		c.RunE = func(cmd *cobra.Command, args []string) error {
			err := run(cmd, args)
			if err == nil || errors.As(err, new(*exitError)) {
				return err
			}
			return &exitError{code: ExitFailed, err: err}
		}
	}
}

// withHint is the text of a failure (exit 1) with what to do about it
// when its cause is one the system names (a refused connection, a full
// disk, a path that cannot be made or written), unless the text already
// says it.
func withHint(err error) string {
	msg := err.Error()
	var hint string
	var dns *net.DNSError
	switch {
	case errors.Is(err, syscall.ECONNREFUSED):
		hint = "check that the server at that address is running, and the host and port"
	case errors.As(err, &dns):
		hint = "check the host name"
	case errors.Is(err, syscall.ENOSPC):
		hint = "free space on the disk it writes to, or write elsewhere"
	case errors.Is(err, syscall.EPIPE):
		hint = "check the command the output is piped into: it stopped reading"
	case errors.Is(err, fs.ErrPermission), errors.Is(err, syscall.EROFS):
		hint = "check the permissions of the path it names, or choose one this user may write"
	case errors.Is(err, syscall.ENOTDIR):
		hint = "check the path: a part of it is a file, not a directory"
	case errors.Is(err, fs.ErrNotExist):
		hint = "check the path: a file or directory it names does not exist"
	}
	if hint == "" || strings.Contains(msg, hint) {
		return msg
	}
	return msg + " (" + hint + ")"
}

func newRoot(stdio IO, open providerOpener) *cobra.Command {
	root := &cobra.Command{
		Use:   "agentrt",
		Short: "agentrt runs agents exactly as their profiles declare and records what really happened",
		Long: `agentrt is an agent execution contract and runtime.

It validates and identifies agent profiles and contract documents byte for
byte like the reference TypeScript implementation, and runs them.`,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.AddCommand(newRunCmd(stdio, open), newRunsCmd(stdio, open), newProfileCmd(stdio), newCandidateCmd(stdio), newCheckCmd(stdio), newServeCmd(stdio, open), newWorkerCmd(stdio), newFleetCmd(stdio), newMCPCmd(stdio, open), newVersionCmd(stdio))
	root.AddCommand(newTopCmd(stdio))
	root.AddCommand(newChatCmd(stdio, open))
	root.AddCommand(newConformanceCmd(stdio))
	root.AddCommand(newImproveCmd(stdio))
	root.AddCommand(newSuperviseCmd(stdio, open), newGraphCmd(stdio, open), newSteerCmd(stdio), newCancelCmd(stdio))
	root.SetFlagErrorFunc(func(c *cobra.Command, err error) error {
		return usage("%s (see %s --help)", flagErrorText(err), c.CommandPath())
	})
	root.SetHelpCommand(newHelpCmd())
	root.InitDefaultCompletionCmd()
	requireCommands(root)
	classifyErrors(root)
	return root
}

// newHelpCmd is agentrt help [COMMAND...]: the help of COMMAND (of
// agentrt without one) on stdout; a command agentrt does not have is a
// usage error, not help printed as a success.
func newHelpCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "help [command]",
		Short: "Help about any command",
		Long:  "Print the help of a command (agentrt help runs list), or of agentrt.",
		RunE: func(c *cobra.Command, args []string) error {
			cmd, rest, err := c.Root().Find(args)
			if err != nil || cmd == nil || len(rest) > 0 {
				return usage("no command %q (agentrt help lists the commands)", strings.Join(args, " "))
			}
			return cmd.Help()
		},
	}
}

// requireCommands makes every command that only groups others (agentrt,
// agentrt runs, agentrt profile, ...) refuse being run without one, or
// with one it does not have, as a usage error (exit 2, on stderr),
// instead of printing its help as a success: agentrt runs lsit is a
// typo, not a request for help. --help still prints it, exit 0.
func requireCommands(c *cobra.Command) {
	for _, sub := range c.Commands() {
		requireCommands(sub)
	}
	if c.Runnable() || !c.HasSubCommands() {
		return
	}
	c.Args = func(cmd *cobra.Command, args []string) error {
		if len(args) > 0 {
			return usage("unknown command %q for %q (see %s --help)", args[0], cmd.CommandPath(), cmd.CommandPath())
		}
		return nil
	}
	c.RunE = func(cmd *cobra.Command, _ []string) error {
		var names []string
		for _, sub := range cmd.Commands() {
			if sub.IsAvailableCommand() {
				names = append(names, sub.Name())
			}
		}
		return usage("%s needs a command: %s (see %s --help)", cmd.CommandPath(), strings.Join(names, ", "), cmd.CommandPath())
	}
}

// readInput reads a file argument; "-" is standard input.
//
// A file the user named that cannot be read (missing, a directory, not
// readable, larger than maxInputLen) is a usage error, exit 2, whose message names the
// file and what to do; a file that reads but whose content is refused is
// the command's to judge (exit 1).
//
// Standard input is read once: a second "-" of the same command line is
// a usage error, not an empty file.
func readInput(stdio IO, path string) ([]byte, error) {
	if path == "-" {
		if u := stdio.stdin; u != nil {
			if u.read {
				return nil, usage("- names standard input for a second file, and it was already read for the first: give at most one file as -, the others by name")
			}
			u.read = true
		}
		return readCapped(stdio.In, path)
	}
	return readFile(path)
}

// readFile reads the file at path, at most maxInputLen bytes of it: a
// larger one is refused. Every failure is a usage error (exit 2).
func readFile(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, unreadable(path, err)
	}
	defer f.Close()
	// A regular file's size is known: one over the cap is refused
	// unread (reading up to the cap first would hold over twice the cap
	// while the buffer grows).
	if info, err := f.Stat(); err == nil && info.Mode().IsRegular() {
		if info.Size() > maxInputLen {
			return nil, tooLarge(path)
		}
	}
	return readCapped(f, path)
}

// readCapped reads r, named path in errors, refusing more than
// maxInputLen bytes.
func readCapped(r io.Reader, path string) ([]byte, error) {
	data, err := io.ReadAll(io.LimitReader(r, maxInputLen+1))
	if err != nil {
		return nil, unreadable(path, err)
	}
	if len(data) > maxInputLen {
		return nil, tooLarge(path)
	}
	return data, nil
}

// tooLarge refuses the input at path for holding more than maxInputLen
// bytes: a usage error.
func tooLarge(path string) error {
	return &exitError{code: ExitUsage, err: fmt.Errorf("%s is larger than %d bytes, the most agentrt reads of a file: give a smaller one", path, maxInputLen)}
}

// unreadable is the usage error of a file the user named that could not
// be read: err, and what to do about it.
func unreadable(path string, err error) error {
	hint := "name a file that exists and can be read"
	if path == "-" {
		hint = "give the input on standard input, or name a file"
	}
	// The path is said once: an *fs.PathError's own text repeats it.
	var pe *fs.PathError
	if errors.As(err, &pe) {
		err = pe.Err
	}
	return &exitError{code: ExitUsage, err: fmt.Errorf("cannot read %s: %w (%s)", path, err, hint)}
}

func newVersionCmd(stdio IO) *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the agentrt version",
		Args:  cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			fmt.Fprintln(stdio.Out, "agentrt", Version)
			return nil
		},
	}
}

// Version is the agentrt release.
const Version = "0.1.0-dev"

// flagErrorText says what a flag's value should have been when the value
// given does not parse as its type, instead of the Go parser's error
// ("strconv.ParseInt: parsing ...: invalid syntax"), or that it is out of
// range when it is of the flag's kind but too large for it; any other
// flag error (an unknown flag, a missing value) is said as pflag says it.
func flagErrorText(err error) string {
	var bad *pflag.InvalidValueError
	if !errors.As(err, &bad) || bad.GetFlag() == nil {
		return err.Error()
	}
	want := ""
	switch bad.GetFlag().Value.Type() {
	case "int", "int8", "int16", "int32", "int64", "uint", "uint8", "uint16", "uint32", "uint64":
		want = "a whole number, such as 4"
	case "float32", "float64":
		want = "a number, such as 2.5"
	case "duration":
		want = "a duration, such as 30s, 5m or 1h30m"
	case "bool":
		want = "true or false"
	default:
		return err.Error()
	}
	if errors.Is(err, strconv.ErrRange) {
		// The value is of the flag's kind but too large (or too small)
		// for it: "must be a whole number" would be wrong.
		return fmt.Sprintf("--%s %q: the value is out of range (too large or too small for the flag): give %s", bad.GetFlag().Name, bad.GetValue(), want)
	}
	return fmt.Sprintf("--%s %q: the value must be %s", bad.GetFlag().Name, bad.GetValue(), want)
}
