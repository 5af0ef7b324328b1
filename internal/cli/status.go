package cli

import (
	"fmt"
	"io"
	"strings"
	"unicode/utf8"

	"golang.org/x/term"

	"github.com/agentrt/agentrt/internal/termsafe"
)

// terminal reports whether w is a terminal and, if it is, how many
// columns it has (0 when its size is unknown).
func terminal(w io.Writer) (bool, int) {
	f, ok := unwrap(w).(interface{ Fd() uintptr })
	if !ok {
		return false, 0
	}
	fd := int(f.Fd())
	if !term.IsTerminal(fd) {
		return false, 0
	}
	cols, _, err := term.GetSize(fd)
	if err != nil {
		cols = 0
	}
	return true, cols
}

// statusLine is one line of progress. On a terminal (tty) it is
// rewritten in place — a carriage return, the new text, blanks over what
// is left of the old — and cleared at the end; anywhere else each
// message is a line of its own, so logs keep every step. A message is
// escaped for the terminal (termsafe.Line), and the line's own carriage
// returns and backspaces go to the terminal as they are (machine). It is
// not safe for concurrent use.
type statusLine struct {
	w     io.Writer
	tty   bool
	width int // the terminal's columns; 0 when unknown

	msg   string // the message to show (tty)
	shown int    // runes of the line on the screen now
	held  bool   // another writer left the cursor mid-line: draw later
}

// defaultWidth is the width assumed of a terminal whose size is unknown.
const defaultWidth = 80

// set shows msg: it replaces the line on a terminal, and is printed as a
// line anywhere else.
func (s *statusLine) set(msg string) {
	msg = termsafe.Line(msg)
	if !s.tty {
		fmt.Fprintln(s.w, msg)
		return
	}
	s.msg = msg
	s.draw()
}

// draw writes the current message over the line, clipped to the
// terminal's width so it never wraps (a wrapped line cannot be rewritten
// by a carriage return).
func (s *statusLine) draw() {
	if !s.tty || s.held || s.msg == "" {
		return
	}
	width := s.width
	if width <= 0 {
		width = defaultWidth
	}
	msg := clip(s.msg, max(width-1, 1))
	n := utf8.RuneCountInString(msg)
	pad := max(s.shown-n, 0)
	// Blanks erase the rest of a longer old line; backspaces bring the
	// cursor back to the end of the message.
	io.WriteString(machine(s.w), "\r"+msg+strings.Repeat(" ", pad)+strings.Repeat("\b", pad))
	s.shown = n
}

// clear erases the line from a terminal, leaving the cursor at its
// start; the message is kept for the next draw.
func (s *statusLine) clear() {
	if !s.tty || s.shown == 0 {
		return
	}
	io.WriteString(machine(s.w), "\r"+strings.Repeat(" ", s.shown)+"\r")
	s.shown = 0
}

// yield lets another writer use the same screen: it clears the line,
// runs write, and draws the line again once the cursor is back at the
// start of a line (atLineStart); until then the line stays hidden, so it
// never lands in the middle of the other writer's text.
func (s *statusLine) yield(write func(), atLineStart bool) {
	s.clear()
	write()
	s.held = !atLineStart
	s.draw()
}

// done clears the line for good.
func (s *statusLine) done() {
	s.clear()
	s.msg = ""
}

// counter shows how far a long listing has got — "1200 events…" — on
// stderr's status line, while the listing itself goes to stdout. It
// shows nothing unless stderr is a terminal that stdout is not: a log
// keeps no counts, and a listing on the screen is its own progress.
type counter struct {
	line        *statusLine // nil: show nothing
	what        string
	every, next int
	n           int
}

// newCounter counts what (a plural noun) on stdio.Err, updating the
// line every so many.
func newCounter(stdio IO, what string, every int) *counter {
	c := &counter{what: what, every: every, next: every}
	errTTY, width := terminal(stdio.Err)
	if outTTY, _ := terminal(stdio.Out); errTTY && !outTTY {
		c.line = &statusLine{w: stdio.Err, tty: true, width: width}
	}
	return c
}

// add counts k more.
func (c *counter) add(k int) {
	c.n += k
	if c.line == nil || c.n < c.next {
		return
	}
	c.next = (c.n/c.every + 1) * c.every
	c.line.set(fmt.Sprintf("%d %s…", c.n, c.what))
}

// done clears the count.
func (c *counter) done() {
	if c.line != nil {
		c.line.done()
	}
}
