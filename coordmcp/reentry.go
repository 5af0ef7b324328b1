package coordmcp

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/agentrt/agentrt/supervise"
)

// MaxReentryNoteBytes bounds the re-entry note a resumed run's harness
// manager is given (HarnessBrain): the workers listed stop where the
// next would pass it, and the note says how many more there are.
const MaxReentryNoteBytes = 16 << 10

// reentryReserved is the room of the re-entry note kept from the worker
// lists: the questions (at most supervise.MaxReentryQuestions, each
// clipped) and the guidance.
const reentryReserved = 5 << 10

// reentryGuidance is the part of reentryReserved kept for the lines
// after the questions.
const reentryGuidance = 1536

// reentryNote is what a harness manager started afresh on a resumed run
// is told after its instructions (spec/runtime.md §3.6 resume): that it
// re-enters a run in progress, what its workers did (supervise's
// Coordinator.Reentry), what waits for it, and to take that in before it
// spawns anything. The harness's new session knows nothing else of the
// earlier one. The note stays within MaxReentryNoteBytes.
func (b *HarnessBrain) reentryNote(runID string, st supervise.ReentryState) string {
	granted := func(v string) bool { return slices.Contains(b.granted, supervise.ToolPrefix+v) }
	var s strings.Builder
	s.WriteString("\n---\nYou are re-entering run " + runID + ", which is already in progress: an earlier session of its manager ended before the run did, " +
		"and this is a new session that knows only what this prompt says. It is the same run with the same task, not a new one, and the workers below are yours.\n")
	fmt.Fprintf(&s, "Journal: %d rows, %d of them written before this session", st.JournalRows, st.PriorRows)
	if granted(supervise.VerbReadJournal) {
		s.WriteString("; read_journal with sinceRow 0 reads the whole run")
	}
	s.WriteString(".\n")
	// What is left of the note's bound is shared by the three lists in
	// equal parts, so a long history of settled workers never crowds
	// out the running and in-doubt ones; the questions and the guidance
	// after them are reserved room.
	share := (MaxReentryNoteBytes - s.Len() - reentryReserved) / 3
	list := func(title, gloss string, ws []supervise.ReentryWorker, omitted int, earlier bool, line func(supervise.ReentryWorker) string) {
		room := share
		if len(ws) == 0 && omitted == 0 {
			s.WriteString(title + ": none.\n")
			return
		}
		// The settled list keeps the most recent workers, so room runs
		// out on the earlier ones; the others keep the first admitted.
		var items []string
		for i := range ws {
			w := ws[i]
			if earlier {
				w = ws[len(ws)-1-i]
			}
			l := line(w)
			if room < len(l)+2 {
				omitted += len(ws) - i
				break
			}
			room -= len(l) + 2
			items = append(items, l)
		}
		if earlier {
			slices.Reverse(items)
		}
		which := "later"
		if earlier {
			which = "earlier"
		}
		fmt.Fprintf(&s, "%s (%d%s): %s", title, len(items)+omitted, gloss, strings.Join(items, "; "))
		switch {
		case omitted > 0 && len(items) == 0:
			fmt.Fprintf(&s, "all %d left out", omitted)
		case omitted > 0:
			fmt.Fprintf(&s, "; and %d %s ones left out", omitted, which)
		}
		s.WriteString(".\n")
	}
	list("Workers settled", "", st.Settled, st.SettledOmitted, true, func(w supervise.ReentryWorker) string {
		l := workerLine(w) + " " + string(w.State)
		switch {
		case w.Delivered == nil:
		case *w.Delivered:
			l += ", passed its check"
		case w.State == supervise.StateDone:
			l += ", did not pass its check"
		}
		if w.Verdict != "" {
			l += " (" + strconv.Quote(w.Verdict) + ")"
		}
		if w.Reason != "" {
			l += ": " + strconv.Quote(w.Reason)
		}
		if w.OutRef != "" {
			l += ", outRef " + w.OutRef
		}
		return l
	})
	list("Workers running", "", st.Live, st.LiveOmitted, false, func(w supervise.ReentryWorker) string {
		return workerLine(w) + " " + string(w.State)
	})
	list("Workers in doubt", "; started by the earlier session and never settled: they may have done their work, and their outcome is unknown",
		st.InDoubt, st.InDoubtOmitted, false, func(w supervise.ReentryWorker) string {
			l := workerLine(w)
			if w.Reason != "" {
				l += ": " + strconv.Quote(w.Reason)
			}
			return l
		})
	if len(st.OpenQuestions) > 0 {
		room, omitted := reentryReserved-reentryGuidance, st.OpenQuestionsOmitted
		var qs []string
		for i, q := range st.OpenQuestions {
			l := fmt.Sprintf("%s from %s (%s): %s", q.ID, q.From, q.Urgency, strconv.Quote(q.Question))
			if room < len(l)+2 {
				omitted += len(st.OpenQuestions) - i
				break
			}
			room -= len(l) + 2
			qs = append(qs, l)
		}
		fmt.Fprintf(&s, "Questions waiting for your answer (%d): %s", len(qs)+omitted, strings.Join(qs, "; "))
		if omitted > 0 {
			fmt.Fprintf(&s, "; and %d later ones left out", omitted)
		}
		s.WriteString(".\n")
	}
	fmt.Fprintf(&s, "Events waiting for you in await_event: %d.\n", st.WaitingEvents)
	if st.Submitted {
		s.WriteString("A result you submitted already passed the check: do not submit again.\n")
	}
	s.WriteString("What to do now: continue the run from this state. First take the waiting events with await_event")
	if granted(supervise.VerbObserveAgent) {
		s.WriteString(", and read a settled or running worker with observe_agent and its worker id")
	}
	s.WriteString(", before you spawn anything. Do not spawn a replacement for a worker that is running or settled: " +
		"spawn_worker with a worker's same key and the same request returns its completed work instead of running it again, " +
		"and is refused while that worker runs or is in doubt. A worker in doubt may have done its work: spawn its task again, under a new key, only once you know it is needed.\n")
	return s.String()
}

// workerLine names a worker in the re-entry note: its id, label,
// profile and key (the texts quoted).
func workerLine(w supervise.ReentryWorker) string {
	l := string(w.ID)
	if w.Label != "" {
		l += " " + strconv.Quote(w.Label)
	}
	if w.Profile != "" {
		l += " profile " + strconv.Quote(w.Profile)
	}
	if w.Key != "" {
		l += " key " + strconv.Quote(w.Key)
	}
	return l
}

// MaxReentryFailureBytes bounds the failure a manager entered again
// after a failed turn is told of.
const MaxReentryFailureBytes = 1 << 10

// reentryReason says why the run drives its manager again in this
// session (supervise.DriverReentry): the earlier session failed, its
// upstream refused for capacity, or it returned while the run had
// delivered nothing — then with the instruction of what is still owed.
func reentryReason(r *supervise.DriverReentry) string {
	switch r.Reason {
	case supervise.ReentryDriverFailure:
		f := r.Failure
		if len(f) > MaxReentryFailureBytes {
			f = strings.ToValidUTF8(f[:MaxReentryFailureBytes], "") + "…"
		}
		return fmt.Sprintf("Why you are entered again: the earlier session failed (retry %d): %s\n", r.Retry, strconv.Quote(f))
	case supervise.ReentryUpstreamUnavailable:
		return fmt.Sprintf("Why you are entered again: the earlier session's model provider refused it for capacity (%s); the run paused and goes on now (pause %d).\n", r.Signal, r.Pause)
	case supervise.ReentryUnmetContract:
		return fmt.Sprintf("Why you are entered again: the earlier session ended while the run had delivered nothing that passed its check (re-prompt %d). What is still owed:\n%s\n", r.Reprompt, r.Steer)
	}
	return ""
}
