package cli

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/contract"
	"github.com/agentrt/agentrt/journal/conversation"
	"github.com/agentrt/agentrt/kernel"
	"github.com/agentrt/agentrt/ledger"
	"github.com/agentrt/agentrt/profile"
	"github.com/agentrt/agentrt/store"
	"github.com/agentrt/agentrt/store/sqlite"
	"github.com/agentrt/agentrt/telemetry"
)

// Chat speakers, as the conversation journal records them.
const (
	speakerUser      = "user"
	speakerAssistant = "assistant"
)

// KindChat is the kind of the run recorded for each answer of a chat.
const kindChat = "chat"

// Continuation modes: how an answer's turn carried what came before it.
const (
	// continuationFirst: the session's first exchange; nothing came before.
	continuationFirst = "first"
	// continuationNative: the provider session of the kept environment
	// holds the earlier turns; only the new turn is sent.
	continuationNative = "native"
	// continuationResent: the earlier turns are re-sent with the new one.
	continuationResent = "resent"
)

// maxChatLine bounds one line of input (one user turn).
const maxChatLine = 1 << 20

// maxAttempts bounds how many recorded runs one turn may have.
const maxAttempts = 1000

func newChatCmd(stdio IO, open providerOpener) *cobra.Command {
	var sf storeFlags
	var asJSON, quiet bool
	var providerName, scriptPath, baseURL, openaiAPI, journalPath, sessionID, seatsPath string
	var stage int
	var lease, turnTimeout time.Duration
	cmd := &cobra.Command{
		Use:   "chat PROFILE [--session ID]",
		Short: "Hold a multi-turn conversation with an agent profile, every turn recorded",
		Long: `Hold a conversation with the profile in PROFILE: each line read from stdin
is a user turn (on a terminal, after a "you>" prompt), answered in one
environment of the provider, created once and destroyed when the session ends.
Ctrl-D (end of input) ends the session; Ctrl-C cancels the answer being
written (the run is recorded cancelled) and, at the prompt, ends the session.
A turn whose answer failed or was cancelled must be answered before the next:
on a terminal an empty line tries it again; otherwise the session ends, and
--session answers it later.

Every answer is a run in the run store (kind "chat", agentrt runs show ID),
with its events and cost ledger, named <turn id>.a<attempt>. Every turn is
also recorded in a conversation journal under the session id, with
deterministic turn ids (<session>.t<index>.user, <session>.t<index>.assistant)
and, on each answer, the provider's native session id when the provider
reported one: by default the file <store>.conversations.jsonl next to a
SQLite store, or the same PostgreSQL database (--journal FILE chooses a file).

--session ID continues a recorded session, in a new environment: a user turn
whose answer was never recorded (the last process ended mid-turn) is answered
first, then new lines are read. An earlier answer whose run is still live is
waited out for its lease first: a process that renews it (still answering)
or completes it means the turn is not answered twice (exit 1, saying so). A provider that continues sessions natively
is sent only the new turn while its environment lives; otherwise — and for
the first answer after --session, since a new environment remembers nothing
— the earlier turns are re-sent as context. stderr says which happened.
A session continues only under the profile its answers ran; another is
refused (exit 2), as agentrt runs resume refuses it.

On a profile with seats each answer walks the seat chain on the provider
(with --seats ACCOUNTS.json, each stage on the provider the file names for
it, as for agentrt run --seats),
from --stage for the first answer and, after that, from the stage that
answered last: a typed quota refusal moves the answer on to the next
authored stage (stderr says so), and the session goes on there. Each answer
is then a seated run (agentrt runs show ID names every stage tried, each
stage's run is ID.stage-K), all of them the session's one logical node; each
stage keeps its own environment, and a stage that starts fresh is sent the
earlier turns as context.

The answer streams to stdout as it arrives, progress to stderr. --json prints
one JSON object per answer on stdout (NDJSON): session, turn, turnId, runId,
attempt, continuation, status, text, usage (unknown is null), servedModel,
environmentId, nativeSessionId, recorded. Providers and their flags are those
of agentrt run.

With OTEL_EXPORTER_OTLP_ENDPOINT set, each answer's run is traced over
OTLP/HTTP in a trace derived from its run id.

Exit status: 0 when input ended with every turn answered, 1 when a turn
was left unanswered (continue it with --session), 2 for usage errors.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			if args[0] == "-" {
				return usage("chat reads its turns from stdin; give PROFILE as a file, not -")
			}
			p, err := loadProfile(stdio, args[0], asJSON)
			if err != nil {
				return err
			}
			var seats *seatAccountManager
			if seatsPath != "" {
				for _, name := range []string{"provider", "script", "base-url", "openai-api"} {
					if cmd.Flags().Changed(name) {
						return usage("--%s does not apply to --seats: the --seats file names each stage's provider", name)
					}
				}
				if seats, err = openSeated(stdio, seatedRun{seatsPath: seatsPath, stage: stage, quiet: quiet}, p); err != nil {
					return err
				}
			}
			var provider contract.Provider
			if seats != nil {
				provider = seats.providers[stage]
			} else if provider, err = open(providerName, scriptPath, baseURL, openaiAPI); err != nil {
				return err
			}
			s, err := sf.open(ctx)
			if err != nil {
				return err
			}
			defer s.Close()
			j, where, err := openChatJournal(ctx, &sf, journalPath)
			if err != nil {
				return err
			}
			defer j.Close()
			tracing := startTracing(ctx, stdio)
			defer stopTracing(ctx, stdio, tracing)
			c := &chat{stdio: stdio, profile: p, label: args[0], store: s, journal: j, journalWhere: where,
				storeWhere: sf.describe(), asJSON: asJSON, quiet: quiet, stage: stage, lease: lease,
				turnTimeout: turnTimeout, now: time.Now, tracing: tracing}
			if err := c.open(ctx, sessionID); err != nil {
				return err
			}
			if err := c.sameProfile(ctx); err != nil {
				return err
			}
			caps, err := provider.Capabilities(ctx)
			if err != nil {
				return &exitError{code: ExitFailed, err: fmt.Errorf("reading the capabilities of provider %s: %w", provider.Name(), err)}
			}
			c.kept = kernel.KeepEnvironment(provider)
			c.native = caps.Sessions.Continue
			if c.native {
				// The provider continues a session it is named: every turn
				// names this one, so the kept environment's session holds
				// the conversation.
				c.kept.SetSessionID(c.id)
			}
			if len(p.Seats) > 0 {
				if stage < 0 || stage >= len(p.Seats) {
					return usage("--stage %d: the profile has %d seats (0 to %d)", stage, len(p.Seats), len(p.Seats)-1)
				}
				// Each answer walks the seat chain from the stage that
				// served the last one (seatedChat).
				var accounts kernel.AccountManager = kernel.AccountManagerFunc(func(context.Context, int, profile.Seat) (contract.Provider, error) { return provider, nil })
				if seats != nil {
					accounts = seats
				}
				c.seats = &seatedChat{accounts: accounts, session: c.id, kept: map[int]*kernel.KeptProvider{}, seen: map[int]int{},
					native: map[int]bool{stage: c.native}}
				if !cmd.Flags().Changed("stage") {
					// A continued session goes on at the stage that
					// answered last, not back at the first.
					c.resumeStage(ctx)
				}
			}
			defer c.close(ctx)
			return c.loop(ctx)
		},
	}
	sf.register(cmd)
	cmd.Flags().StringVar(&seatsPath, "seats", "", "with a seated profile: a JSON file naming each stage's provider, as for agentrt run --seats (default: every stage on --provider)")
	cmd.Flags().StringVar(&sessionID, "session", "", "continue the recorded session ID (default: start a new one)")
	cmd.Flags().StringVar(&journalPath, "journal", "", "conversation journal file (default: next to the run store, or in its PostgreSQL database)")
	cmd.Flags().StringVar(&providerName, "provider", "scripted", "provider to run on (scripted, openai, anthropic, claude-code, codex, opencode, remote)")
	cmd.Flags().StringVar(&baseURL, "base-url", "", "the model endpoint of the openai, anthropic, claude-code, codex or opencode provider (default: the vendor's), or the agentrt serve address of the remote provider")
	cmd.Flags().StringVar(&openaiAPI, "openai-api", "", "the wire protocol of the openai provider: chat-completions or responses (default chat-completions)")
	cmd.Flags().StringVar(&scriptPath, "script", "", "script for the scripted provider (default: answer every turn with a note)")
	cmd.Flags().IntVar(&stage, "stage", 0, "seat stage to run (0 is the first)")
	cmd.Flags().DurationVar(&lease, "lease", kernel.DefaultLeaseTTL, "how long an answer's run stays running if this process dies or stalls (at least 1s)")
	cmd.Flags().DurationVar(&turnTimeout, "turn-timeout", 0, "give up on one answer after this long (its run is recorded as timed out)")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print one JSON object per answer (NDJSON) instead of the text")
	cmd.Flags().BoolVarP(&quiet, "quiet", "q", false, "no progress on stderr")
	return cmd
}

// chatJournal is a conversation journal this command opened.
type chatJournal interface {
	conversation.Journal
	Close() error
}

// openChatJournal opens the conversation journal: --journal FILE, else
// the PostgreSQL database of the run store, else a file next to the
// SQLite store. It returns where it is, for people (without secrets).
func openChatJournal(ctx context.Context, sf *storeFlags, path string) (chatJournal, string, error) {
	if path == "" && sf.url() != "" {
		j, err := conversation.OpenPostgres(ctx, sf.url(), conversation.SQLOptions{})
		if err != nil {
			return nil, "", &exitError{code: ExitFailed, err: fmt.Errorf("opening the conversation journal in %s: %w", redactURL(sf.url()), err)}
		}
		return j, redactURL(sf.url()), nil
	}
	if path == "" {
		db := sf.path
		if db == "" {
			var err error
			if db, err = sqlite.DefaultPath(); err != nil {
				return nil, "", &exitError{code: ExitFailed, err: err}
			}
		}
		path = db + ".conversations.jsonl"
	}
	j, err := conversation.OpenFile(ctx, path, conversation.FileOptions{CreateDir: true})
	if err != nil {
		return nil, "", &exitError{code: ExitFailed, err: fmt.Errorf("opening the conversation journal %s (another agentrt chat may hold it; --journal FILE chooses another): %w", path, err)}
	}
	return j, path, nil
}

// chat is one session of agentrt chat.
type chat struct {
	stdio                    IO
	profile                  *profile.Profile
	label                    string
	store                    store.Store
	journal                  conversation.Journal
	journalWhere, storeWhere string
	asJSON, quiet            bool
	stage                    int
	lease, turnTimeout       time.Duration
	now                      func() time.Time
	// tracing traces each answer's run (nil: off).
	tracing *telemetry.Tracing

	id string
	// run runs the session's turns in the journal, each recorded once
	// made: the one owner of "continue at the first unrecorded turn".
	run  *conversation.Runner
	kept *kernel.KeptProvider
	// native is set when the provider continues a session it is named.
	native bool
	// inContext is how many of turns the kept environment's provider
	// session has seen: the earlier turns need re-sending when it has
	// not seen them all.
	inContext int
	// seats, for a profile with seats, runs each answer on the seat
	// chain; nil runs every answer on the --stage projection in kept.
	seats *seatedChat
}

// seatedChat is a seated profile's chat: each answer is a seated run
// (kernel.ExecuteSeated) from the stage that served the answer before —
// the chat's stage — on the one provider, whose account owner binds each
// stage's credential from the request its create and turn carry (RG-10).
// A typed quota refusal moves the answer on to the next authored stage,
// and the answers after it go on there. Each stage keeps its own
// environment (its projection) for every answer it serves, destroyed
// when the session ends.
type seatedChat struct {
	// accounts resolves each stage's provider: the chat's one provider,
	// or the --seats file's.
	accounts kernel.AccountManager
	// native says, per stage resolved, whether its provider continues a
	// session it is named.
	native  map[int]bool
	session string
	kept    map[int]*kernel.KeptProvider
	// seen is how many of the session's turns the provider session of
	// each stage's kept environment has seen.
	seen map[int]int
	// elsewhere: the last answer went on natively in the environment of
	// the stage it moved on from, not in its own stage's, which has seen
	// none of the session.
	elsewhere bool
}

// ProviderFor implements kernel.AccountManager: stage's kept environment
// on the chat's provider.
func (sc *seatedChat) ProviderFor(ctx context.Context, stage int, seat profile.Seat) (contract.Provider, error) {
	if k, ok := sc.kept[stage]; ok {
		return k, nil
	}
	p, err := sc.accounts.ProviderFor(ctx, stage, seat)
	if err != nil || p == nil {
		return p, err
	}
	native, known := sc.native[stage]
	if !known {
		caps, err := p.Capabilities(ctx)
		if err != nil {
			return nil, fmt.Errorf("reading the capabilities of provider %s: %w", p.Name(), err)
		}
		native = caps.Sessions.Continue
		sc.native[stage] = native
	}
	k := kernel.KeepEnvironment(p)
	if native {
		k.SetSessionID(sc.session)
	}
	sc.kept[stage] = k
	return k, nil
}

// close destroys every stage's kept environment; the errors are the
// teardowns not confirmed.
func (sc *seatedChat) close(ctx context.Context) error {
	var errs []error
	for _, k := range sc.kept {
		errs = append(errs, k.Close(ctx))
	}
	return errors.Join(errs...)
}

// open begins a new session or loads the recorded one named id.
func (c *chat) open(ctx context.Context, id string) error {
	if id == "" {
		c.id = kernel.NewID("chat")
		r, err := conversation.StartRunner(ctx, c.journal, c.id, conversation.RunnerOptions{Now: c.now})
		if err != nil {
			return &exitError{code: ExitFailed, err: fmt.Errorf("beginning session %s in %s: %w", c.id, c.journalWhere, err)}
		}
		c.run = r
		return nil
	}
	e, err := c.journal.LoadRun(ctx, id)
	if err != nil {
		return &exitError{code: ExitFailed, err: fmt.Errorf("reading session %s from %s: %w", id, c.journalWhere, err)}
	}
	if e == nil {
		return &exitError{code: ExitFailed, err: fmt.Errorf("no session %q is recorded in the conversation journal %s; leave out --session to start a new one (chat prints the id of the session it records), or point --journal/--db/--database at the store the session was recorded in", id, c.journalWhere)}
	}
	if e.Halt != nil {
		return &exitError{code: ExitFailed, err: fmt.Errorf("session %q has ended (%s) and takes no more turns; start a new one by leaving out --session", id, e.Halt.Kind)}
	}
	r, err := conversation.NewRunner(c.journal, e, conversation.RunnerOptions{Now: c.now})
	if err != nil {
		return &exitError{code: ExitFailed, err: fmt.Errorf("continuing session %s: %w", id, err)}
	}
	c.id, c.run = id, r
	return nil
}

// sameProfile refuses to continue a session whose last recorded answer
// ran another profile than the one given (its run record's authored
// profile digest), as agentrt runs resume refuses it: the session's
// answers are one profile's. A session with no answer yet, or whose last
// answer's record this store does not hold, is not checked (said on
// stderr).
func (c *chat) sameProfile(ctx context.Context) error {
	runID := ""
	for _, tr := range slices.Backward(c.run.Turns()) {
		if tr.Speaker == speakerAssistant {
			runID = fmt.Sprintf("%s.a%d", tr.TurnID, max(tr.Attempts, 1))
			break
		}
	}
	if runID == "" {
		return nil
	}
	rec, err := kernel.ReadRun(ctx, c.store, runID)
	var recorded string
	switch {
	case err != nil:
	case rec.Seated != nil:
		recorded = rec.Seated.ProfileDigest
	case rec.Exact != nil:
		recorded = rec.Exact.AuthoredProfileDigest
	}
	if recorded == "" {
		c.say("warning: the run of session %s's last answer (%s) is not readable in %s, so its profile is not checked", c.id, runID, c.storeWhere)
		return nil
	}
	digest, err := profile.Digest(c.profile)
	if err != nil {
		return usage("%s: the profile has no identity: %v", c.label, err)
	}
	if digest != recorded {
		return usage("session %s was answered with another profile (%s, run %s) than %s (%s); continue it with the profile it was answered with, or leave out --session to start a new one",
			c.id, recorded, runID, c.label, digest)
	}
	return nil
}

// resumeStage sets a continued seated session's stage to the one that
// answered its last recorded answer, as that answer's seated run
// recorded it; a session whose last answer's record cannot be read, or
// names no stage that answered, keeps its stage.
func (c *chat) resumeStage(ctx context.Context) {
	for _, tr := range slices.Backward(c.run.Turns()) {
		if tr.Speaker != speakerAssistant {
			continue
		}
		runID := fmt.Sprintf("%s.a%d", tr.TurnID, max(tr.Attempts, 1))
		rec, err := kernel.ReadRun(ctx, c.store, runID)
		if err != nil || rec.Seated == nil {
			return
		}
		for _, at := range slices.Backward(rec.Seated.Stages) {
			if at.Outcome == kernel.StageCompleted && at.Stage >= c.stage && at.Stage < len(c.profile.Seats) {
				if at.Stage != c.stage {
					c.say("continuing on stage %d (%s on %s), the stage that answered last (run %s)", at.Stage, at.Model, at.Provider, runID)
				}
				c.stage = at.Stage
				return
			}
		}
		return
	}
}

// close destroys the kept environment, within the cleanup timeout even
// when ctx has ended.
func (c *chat) close(ctx context.Context) {
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), kernel.DefaultCleanupTimeout)
	defer cancel()
	if err := c.kept.Close(cctx); err != nil {
		c.say("warning: %v", err)
	}
	if c.seats != nil {
		if err := c.seats.close(cctx); err != nil {
			c.say("warning: %v", err)
		}
	}
}

// say writes one progress line to stderr, unless quiet.
func (c *chat) say(format string, args ...any) {
	if !c.quiet {
		fmt.Fprintf(c.stdio.Err, format+"\n", args...)
	}
}

// pending is the recorded user turn whose answer was never recorded, if
// any: a session continues at its first unrecorded turn (RES-04).
func (c *chat) pending() (conversation.Turn, bool) {
	if turns := c.run.Turns(); len(turns) > 0 && turns[len(turns)-1].Speaker == speakerUser {
		return turns[len(turns)-1], true
	}
	return conversation.Turn{}, false
}

// loop reads user turns until end of input and answers each.
func (c *chat) loop(ctx context.Context) error {
	tty, _ := terminal(c.stdio.Err)
	if in, ok := c.stdio.In.(interface{ Fd() uintptr }); !ok || !term.IsTerminal(int(in.Fd())) {
		tty = false
	}
	state := "new session"
	if c.run.NextIndex() > 0 {
		state = fmt.Sprintf("continuing at turn %d", c.run.NextIndex())
	}
	c.say("session %s (%s): %s with %s", c.id, state, c.label, c.kept.Name())
	c.say("recording answers in %s and turns in %s; Ctrl-D ends, Ctrl-C cancels an answer", c.storeWhere, c.journalWhere)
	if c.run.NextIndex() > 0 {
		// A new environment remembers nothing of the session.
		why := "provider " + c.kept.Name() + " cannot continue a session natively"
		if c.native {
			why = "a new environment of provider " + c.kept.Name() + " holds none of the session"
		}
		c.say("continuation: %s; re-sending the %d recorded turns as context", why, c.run.NextIndex())
	} else if !c.native {
		c.say("continuation: provider %s cannot continue a session natively; each turn re-sends the earlier ones as context", c.kept.Name())
	}

	// Ctrl-C cancels the answer being written; at the prompt it ends the
	// session. The handler is this command's while it runs.
	sigs := make(chan os.Signal, 1)
	signal.Reset(os.Interrupt)
	signal.Notify(sigs, os.Interrupt)
	defer signal.Stop(sigs)

	done := make(chan struct{})
	defer close(done)
	lines := readLines(c.stdio.In, done)
	// unanswered is the user turn whose answer failed or was cancelled:
	// the journal takes no new turn before it is answered. On a terminal
	// an empty line tries it again; otherwise the session ends.
	var unanswered *conversation.Turn
	try := func(t conversation.Turn) error {
		if c.answer(ctx, sigs, t) {
			unanswered = nil
			return nil
		}
		if !tty {
			return c.unanswered(t)
		}
		unanswered = &t
		c.say("turn %d is not answered: press Enter to try it again, or Ctrl-D to end (agentrt chat --session %s answers it later)", t.Index, c.id)
		return nil
	}
	ended := func() error {
		if tty {
			fmt.Fprintln(c.stdio.Err)
		}
		if unanswered != nil {
			return c.unanswered(*unanswered)
		}
		c.say("session %s ended; continue it with agentrt chat --session %s", c.id, c.id)
		return nil
	}
	if t, ok := c.pending(); ok {
		c.say("turn %d (%q) was never answered (the last process ended mid-turn); answering it now", t.Index, clip(t.Text, 60))
		if err := try(t); err != nil {
			return err
		}
	}
	for {
		if tty {
			fmt.Fprint(c.stdio.Err, "you> ")
		}
		var line chatLine
		select {
		case <-ctx.Done():
			return &exitError{code: ExitFailed, err: fmt.Errorf("session %s stopped: %w; agentrt chat --session %s continues it", c.id, context.Cause(ctx), c.id)}
		case <-sigs:
			return ended()
		case line = <-lines:
		}
		if line.err != nil {
			return &exitError{code: ExitFailed, err: fmt.Errorf("reading the next turn: %w; agentrt chat --session %s continues the session", line.err, c.id)}
		}
		if line.eof {
			return ended()
		}
		text := strings.TrimSpace(line.text)
		switch {
		case unanswered != nil && text != "":
			c.say("turn %d is still not answered: press Enter to try it again, or Ctrl-D to end", unanswered.Index)
			continue
		case unanswered != nil:
			if err := try(*unanswered); err != nil {
				return err
			}
			continue
		case text == "":
			continue
		}
		t, err := c.run.Next(ctx, conversation.Planned{Speaker: speakerUser, Text: text})
		if err != nil {
			return &exitError{code: ExitFailed, err: fmt.Errorf("recording the user turn of session %s in %s: %w", c.id, c.journalWhere, err)}
		}
		if err := try(t); err != nil {
			return err
		}
	}
}

// unanswered ends a session whose turn t went unanswered.
func (c *chat) unanswered(t conversation.Turn) error {
	return &exitError{code: ExitFailed, err: fmt.Errorf("turn %d was not answered; agentrt chat --session %s answers it again", t.Index, c.id)}
}

// answer runs the answer to the user turn t as one recorded run in the
// kept environment and records it; it reports whether it was.
func (c *chat) answer(ctx context.Context, sigs <-chan os.Signal, t conversation.Turn) bool {
	turnID := conversation.TurnID(c.id, t.Index+1, speakerAssistant)
	attempt, runID, err := c.nextAttempt(ctx, turnID)
	if err != nil {
		c.say("turn %d: %v", t.Index+1, err)
		return false
	}
	mode, task := c.prompt(t)
	tctx, cancel := context.WithCancel(ctx)
	defer cancel()
	if c.turnTimeout > 0 {
		tctx, cancel = context.WithTimeout(tctx, c.turnTimeout)
		defer cancel()
	}
	// Ctrl-C cancels this answer only.
	stop := make(chan struct{})
	defer close(stop)
	go func() {
		select {
		case <-sigs:
			cancel()
		case <-stop:
		}
	}()
	live := liveOptions{Label: c.label + " with " + c.kept.Name(), Short: c.kept.Name()}
	if !c.quiet {
		live.Status = c.stdio.Err
	}
	if !c.asJSON {
		live.Text = c.stdio.Out
	}
	var (
		res      *kernel.Result
		runErr   error
		nativeID string
	)
	// The answer is the session's next turn: recorded by the runner once
	// its run completed, never otherwise.
	_, err = c.run.Next(ctx, conversation.Planned{Speaker: speakerAssistant, Produce: func(context.Context, conversation.TurnInput) (conversation.TurnOutput, error) {
		start := c.now()
		if c.seats != nil {
			res, mode, runErr = c.answerSeated(tctx, live, t, mode, task, runID)
		} else {
			res, runErr = runLive(tctx, live, kernel.Request{Profile: c.profile, Task: task, Provider: c.kept, Store: c.store,
				Check: kernel.ExpectCheck(""), Stage: c.stage, RunID: runID, Kind: kindChat, LeaseTTL: c.lease,
				Observer: c.tracing.Observer()})
		}
		end := c.now()
		if res == nil || res.Status != store.StatusCompleted {
			return conversation.TurnOutput{}, errUnanswered
		}
		nativeID = res.NativeSessionID // bound to the run's record too (NSO-02)
		session := nativeID
		if session == "" && c.native {
			session = c.id // the provider session this environment continued
		}
		return conversation.TurnOutput{Text: res.Text, SessionID: session, Usage: journalUsage(res, end.Sub(start)), Attempts: attempt}, nil
	}})
	recorded := err == nil
	switch {
	case recorded:
		c.inContext = c.run.NextIndex()
		if c.seats != nil && !c.seats.elsewhere {
			c.seats.seen[c.stage] = c.run.NextIndex()
		}
	case !errors.Is(err, errUnanswered):
		c.say("turn %d: recording the answer in %s: %v", t.Index+1, c.journalWhere, err)
	}
	if c.asJSON {
		writeNDJSON(c.stdio.Out, c.turnValue(t.Index+1, turnID, runID, attempt, mode, res, nativeID, recorded))
	}
	switch {
	case res == nil:
		c.say("turn %d: not run: %v", t.Index+1, runErr)
	case !recorded:
		why := string(res.Status)
		if res.Reason != "" {
			why += " (" + res.Reason + "): " + res.Detail
		}
		c.say("turn %d: run %s %s; the answer is not recorded", t.Index+1, res.RunID, why)
	default:
		c.say("turn %d: run %s completed · usage input %s, output %s, cost %s", t.Index+1, res.RunID,
			res.Usage.InputTokens, res.Usage.OutputTokens, usd(res.Usage.CostUSD))
	}
	return recorded
}

// errUnanswered is an answer whose run did not complete: the turn is
// not recorded, and is answered again.
var errUnanswered = errors.New("the answer's run did not complete")

// nextAttempt finds the first attempt number of turnID with no run in
// the store: an attempt cut off by a dead process keeps its run. An
// attempt whose run is still live is waited out (awaitAttempt) rather
// than answered over: another process may be answering the turn.
func (c *chat) nextAttempt(ctx context.Context, turnID string) (int, string, error) {
	for a := 1; a <= maxAttempts; a++ {
		id := fmt.Sprintf("%s.a%d", turnID, a)
		r, err := c.store.GetRun(ctx, id)
		if errors.Is(err, store.ErrNotFound) {
			return a, id, nil
		}
		if err != nil {
			return 0, "", fmt.Errorf("looking up run %s in %s: %w", id, c.storeWhere, err)
		}
		if !r.Status.Terminal() {
			if err := c.awaitAttempt(ctx, r); err != nil {
				return 0, "", err
			}
		}
	}
	return 0, "", fmt.Errorf("turn %s already has %d recorded attempts; start a new session", turnID, maxAttempts)
}

// AttemptLiveError is an earlier answer of a turn whose run is live in
// another process, or that completed there after this session was
// loaded: answering the turn again would pay for it twice.
type AttemptLiveError struct {
	// Session and RunID name the session and the earlier answer's run.
	Session, RunID string
	// Status is the run's status when the wait for it ended.
	Status store.Status
}

func (e *AttemptLiveError) Error() string {
	if e.Status == store.StatusCompleted {
		return fmt.Sprintf("run %s answered the turn in another process meanwhile; agentrt chat --session %s continues after it", e.RunID, e.Session)
	}
	return fmt.Sprintf("run %s answering the turn is live in another process (it holds the run's lease); wait for it to end, then agentrt chat --session %s continues", e.RunID, e.Session)
}

// attemptPoll is how often awaitAttempt reads the earlier answer's run.
const attemptPoll = 100 * time.Millisecond

// awaitAttempt waits out r, a live earlier answer of a turn: its process
// is answering the turn elsewhere, or died less than a lease ago. It
// returns nil once r ended unanswered (its lease lapsed: interrupted, or
// failed, cancelled, timed out), and an *AttemptLiveError when r
// completed, or its lease was renewed (its process is alive), or it is
// still live when its lease ends — waiting at most twice this session's
// lease, whatever lease r claims.
func (c *chat) awaitAttempt(ctx context.Context, r store.Run) error {
	held := r.LeaseUntil
	deadline := time.NewTimer(min(time.Until(held)+attemptPoll, 2*c.lease))
	defer deadline.Stop()
	tick := time.NewTicker(attemptPoll)
	defer tick.Stop()
	for {
		switch {
		case r.Status == store.StatusCompleted:
			return &AttemptLiveError{Session: c.id, RunID: r.ID, Status: r.Status}
		case r.Status.Terminal():
			return nil
		case !r.LeaseUntil.Equal(held):
			return &AttemptLiveError{Session: c.id, RunID: r.ID, Status: r.Status}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for run %s to end: %w", r.ID, context.Cause(ctx))
		case <-deadline.C:
			return &AttemptLiveError{Session: c.id, RunID: r.ID, Status: r.Status}
		case <-tick.C:
		}
		now, err := c.store.GetRun(ctx, r.ID)
		if err != nil {
			return fmt.Errorf("looking up run %s in %s: %w", r.ID, c.storeWhere, err)
		}
		r = now
	}
}

// prompt is the turn's task for the provider and how it carries the
// earlier turns: only the new turn when the kept environment's session
// (of a seated chat: the chat's stage's) has seen them all and continues
// natively, else the whole transcript.
func (c *chat) prompt(t conversation.Turn) (string, string) {
	seen, native := c.inContext, c.native
	if c.seats != nil {
		seen, native = c.seats.seen[c.stage], c.seats.native[c.stage]
	}
	earlier := c.run.Turns()[:t.Index]
	switch {
	case len(earlier) == 0:
		return continuationFirst, t.Text
	case native && seen == t.Index:
		return continuationNative, t.Text
	}
	return continuationResent, c.transcript(t)
}

// transcript is the turn's task carrying the whole conversation before
// it.
func (c *chat) transcript(t conversation.Turn) string {
	earlier := c.run.Turns()[:t.Index]
	var b strings.Builder
	b.WriteString("The conversation so far:\n\n")
	for _, e := range earlier {
		fmt.Fprintf(&b, "%s: %s\n\n", e.Speaker, e.Text)
	}
	b.WriteString("Continue it. The user now says:\n")
	b.WriteString(t.Text)
	return b.String()
}

// answerSeated runs the answer to t as a seated run (runID, kind
// seated; each stage's run runID.stage-K, kind chat) from the chat's
// stage, showing it live as runLive does, as the session's logical node.
// A stage that starts fresh after the chain moved on is sent the whole
// conversation (FreshTask), since its environment holds none of it. The
// stage that answered becomes the chat's stage; each stage the answer
// moved on from is said on stderr. It returns the last stage's result
// and the answer's continuation mode.
func (c *chat) answerSeated(ctx context.Context, o liveOptions, t conversation.Turn, mode, task, runID string) (*kernel.Result, string, error) {
	fresh := ""
	if t.Index > 0 {
		fresh = c.transcript(t)
	}
	l := newLiveRun(o)
	l.begin()
	from := c.stage
	c.seats.elsewhere = false
	sres, err := kernel.ExecuteSeated(ctx, kernel.SeatedRequest{Accounts: c.seats, FreshTask: fresh, Node: kernel.SeatedNode(c.id),
		Request: kernel.Request{Profile: c.profile, Task: task, Store: c.store, Check: kernel.ExpectCheck(""), Stage: from, RunID: runID,
			Kind: kindChat, LeaseTTL: c.lease, Observer: &liveObserver{l: l, next: c.tracing.Observer()}}})
	final := ""
	if sres != nil && sres.Final != nil {
		final = sres.Final.Text
	}
	l.end(final)
	if sres == nil {
		return nil, mode, err
	}
	for _, at := range sres.Stages {
		if at.Outcome == kernel.StageQuotaRefused && at.Stage+1 < len(c.profile.Seats) {
			c.say("turn %d: stage %d (%s on %s) %s; moving on to stage %d", t.Index+1, at.Stage, at.Model, at.Provider, stageLine(at), at.Stage+1)
		}
	}
	if n := len(sres.Stages); n > 0 {
		last := sres.Stages[n-1]
		if last.Outcome == kernel.StageCompleted && last.Stage != from {
			c.stage = last.Stage
			c.say("turn %d: answered on stage %d (%s on %s); the session goes on there", t.Index+1, last.Stage, last.Model, last.Provider)
			switch {
			case last.Continuity == kernel.ContinuityNative:
				mode = continuationNative
				c.seats.elsewhere = true
			case t.Index > 0:
				mode = continuationResent
			}
		}
	}
	return sres.Final, mode, err
}

// liveObserver shows a kernel run's events live (liveRun) as they are
// recorded, for a run that is not streamed (a seated run's stages), and
// passes everything on to next (nil: nothing).
type liveObserver struct {
	l    *liveRun
	next kernel.Observer
}

func (o *liveObserver) RunStarted(ctx context.Context, r kernel.RunStart) (context.Context, error) {
	if o.next == nil {
		return ctx, nil
	}
	return o.next.RunStarted(ctx, r)
}

func (o *liveObserver) TurnStarted(ctx context.Context, t kernel.TurnStart) (context.Context, error) {
	if o.next == nil {
		return ctx, nil
	}
	return o.next.TurnStarted(ctx, t)
}

func (o *liveObserver) Event(ctx context.Context, e contract.EnvironmentEvent) error {
	if n := e.Normalized; n != nil && !contract.IsPrivateEvent(*n) {
		if _, terminal := contract.EventTerminal(*n); !terminal {
			o.l.event(contract.EventEnvelope{Event: *n})
		}
	}
	if o.next == nil {
		return nil
	}
	return o.next.Event(ctx, e)
}

// ToolStarted implements kernel.ToolObserver for a next that does.
func (o *liveObserver) ToolStarted(ctx context.Context, c kernel.ToolCallStart) (context.Context, error) {
	if to, ok := o.next.(kernel.ToolObserver); ok {
		return to.ToolStarted(ctx, c)
	}
	return ctx, nil
}

// ToolEnded implements kernel.ToolObserver for a next that does.
func (o *liveObserver) ToolEnded(ctx context.Context, c kernel.ToolCallEnd) error {
	if to, ok := o.next.(kernel.ToolObserver); ok {
		return to.ToolEnded(ctx, c)
	}
	return nil
}

func (o *liveObserver) TurnEnded(ctx context.Context, t kernel.TurnEnd) error {
	if o.next == nil {
		return nil
	}
	return o.next.TurnEnded(ctx, t)
}

func (o *liveObserver) RunEnded(ctx context.Context, r kernel.Result) error {
	if o.next == nil {
		return nil
	}
	return o.next.RunEnded(ctx, r)
}

// journalUsage is a completed answer's usage as the journal keeps it:
// unknown channels stay nil, never 0.
func journalUsage(r *kernel.Result, latency time.Duration) *conversation.Usage {
	known := func(a ledger.Amount[int64]) *int64 {
		if !a.Known() {
			return nil
		}
		v := a.Value
		return &v
	}
	u := &conversation.Usage{TokensIn: known(r.Usage.InputTokens), TokensOut: known(r.Usage.OutputTokens), Model: r.Served.Model}
	if r.Usage.CostUSD.Known() {
		v := r.Usage.CostUSD.Value
		u.CostUSD = &v
	}
	ms := float64(latency.Milliseconds())
	u.LatencyMS = &ms
	return u
}

// turnValue is one answer as --json prints it.
func (c *chat) turnValue(index int, turnID, runID string, attempt int, mode string, r *kernel.Result, nativeID string, recorded bool) canonjson.Value {
	m := []canonjson.Member{
		{Name: "session", Value: canonjson.StringValue(c.id)},
		{Name: "turn", Value: canonjson.NumberValue(float64(index))},
		{Name: "turnId", Value: canonjson.StringValue(turnID)},
		{Name: "runId", Value: canonjson.StringValue(runID)},
		{Name: "attempt", Value: canonjson.NumberValue(float64(attempt))},
		{Name: "continuation", Value: canonjson.StringValue(mode)},
	}
	if r == nil {
		m = append(m, canonjson.Member{Name: "status", Value: canonjson.NullValue()})
	} else {
		m = append(m,
			canonjson.Member{Name: "status", Value: canonjson.StringValue(string(r.Status))},
			canonjson.Member{Name: "text", Value: canonjson.StringValue(r.Text)},
			canonjson.Member{Name: "usage", Value: kernel.UsageValue(r.Usage)},
			canonjson.Member{Name: "servedModel", Value: nullableString(r.Served.Model)},
			canonjson.Member{Name: "environmentId", Value: nullableString(r.EnvironmentID)})
		if r.Reason != "" {
			m = append(m, canonjson.Member{Name: "reason", Value: canonjson.StringValue(r.Reason)},
				canonjson.Member{Name: "detail", Value: canonjson.StringValue(r.Detail)})
		}
	}
	m = append(m,
		canonjson.Member{Name: "nativeSessionId", Value: nullableString(nativeID)},
		canonjson.Member{Name: "recorded", Value: canonjson.BoolValue(recorded)})
	return canonjson.ObjectValue(m)
}

// writeNDJSON prints v as one line of JSON.
func writeNDJSON(w io.Writer, v canonjson.Value) {
	b := canonjson.Marshal(v)
	b = append(b, '\n')
	machine(w).Write(b)
}

// chatLine is one line of input, or its end.
type chatLine struct {
	text string
	eof  bool
	err  error
}

// readLines reads r line by line in the background, so that a turn can
// be cancelled while input waits; the channel ends with eof or err. It
// stops sending once done is closed (a read in progress still ends only
// with its input).
func readLines(r io.Reader, done <-chan struct{}) <-chan chatLine {
	ch := make(chan chatLine)
	go func() {
		send := func(l chatLine) bool {
			select {
			case ch <- l:
				return true
			case <-done:
				return false
			}
		}
		sc := bufio.NewScanner(r)
		sc.Buffer(make([]byte, 0, 64<<10), maxChatLine)
		for sc.Scan() {
			if !send(chatLine{text: sc.Text()}) {
				return
			}
		}
		if err := sc.Err(); err != nil {
			if errors.Is(err, bufio.ErrTooLong) {
				err = fmt.Errorf("a line of input (one turn) is longer than %d bytes: %w", maxChatLine, err)
			}
			send(chatLine{err: err})
			return
		}
		send(chatLine{eof: true})
	}()
	return ch
}
