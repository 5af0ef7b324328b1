package clibridge

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/agentrt/agentrt/internal/procguard"
)

// maxLine bounds one stdout line of a harness; a longer line fails the
// turn (the rest of the output is drained, not read).
const maxLine = 32 << 20

// stderrTail is how much of the end of standard error a failure reports.
const stderrTail = 2000

// maxStderrLog bounds the stderr log a turn keeps on disk; what a
// harness writes past it is not kept there (the tail a failure reports
// is still the real end).
const maxStderrLog = 8 << 20

// exitGrace is how long a harness has to exit once it wrote its last
// word (its result line): past it the bridge kills the process group and
// the turn fails, rather than waiting forever for a harness that hung
// after answering.
const exitGrace = 30 * time.Second

// proc is one harness process to run.
type proc struct {
	// binary and args are run exactly, shell-free, in dir, with environ
	// as the whole environment and stdin as standard input.
	binary string
	args   []string
	dir    string
	env    []string
	stdin  string
	// logDir receives the stderr log; secrets are redacted from what of
	// it the exit reports.
	logDir  string
	secrets []string
	// onSpawn, when set, receives the process group id.
	onSpawn func(pgid int)
	// exitGrace is how long the process has after its last word
	// (exitGrace when zero).
	exitGrace time.Duration
}

// run runs p once, in a new process group. onLine receives every stdout line, in order,
// on the calling goroutine, and reports whether the line was the
// harness's last word (its result). When ctx ends first, the whole process group
// is killed and the exit says cancelled; when the harness has not exited
// p.exitGrace after its last word, the group is killed and the exit says
// lingered. Whatever happens, the group is
// killed once the harness exits, so no child it left behind survives the
// turn. Its standard error is kept in a log of at most maxStderrLog.
func run(ctx context.Context, p proc, onLine func([]byte) bool) exit {
	errFile, err := os.CreateTemp(p.logDir, "stderr-*.log")
	if err != nil {
		return exit{code: -1, err: fmt.Errorf("creating the stderr log: %w", err)}
	}
	defer errFile.Close()
	r, w, err := os.Pipe()
	if err != nil {
		return exit{code: -1, err: err}
	}
	defer r.Close()
	er, ew, err := os.Pipe()
	if err != nil {
		w.Close()
		return exit{code: -1, err: err}
	}
	defer er.Close()
	cmd := exec.Command(p.binary, p.args...)
	cmd.Dir, cmd.Env = p.dir, p.env
	cmd.Stdin = strings.NewReader(p.stdin)
	cmd.Stdout, cmd.Stderr = w, ew
	// Its group dies with this process (procguard): a supervisor killed
	// mid-turn leaves no harness calling its model.
	cmd.SysProcAttr = procguard.Attr()
	if err := cmd.Start(); err != nil {
		w.Close()
		ew.Close()
		return exit{code: -1, err: err}
	}
	w.Close()
	ew.Close()
	pgid := cmd.Process.Pid
	if release, err := procguard.Group(pgid); err == nil {
		defer release()
	}
	if p.onSpawn != nil {
		p.onSpawn(pgid)
	}
	// Standard error is drained into the capped log; it ends when the
	// group is gone (the last holder of the pipe closed it).
	logged := make(chan struct{})
	stderr := &cappedWriter{w: errFile, n: maxStderrLog}
	go func() {
		defer close(logged)
		io.Copy(stderr, er)
	}()

	grace := cmp.Or(p.exitGrace, exitGrace)
	var killed, lingered atomic.Bool
	exited := make(chan struct{})
	said := make(chan struct{})
	go func(said <-chan struct{}) {
		var overdue <-chan time.Time
		for {
			select {
			case <-ctx.Done():
				killed.Store(true)
				syscall.Kill(-pgid, syscall.SIGKILL)
				return
			case <-said:
				said = nil
				t := time.NewTimer(grace)
				defer t.Stop()
				overdue = t.C
			case <-overdue:
				lingered.Store(true)
				syscall.Kill(-pgid, syscall.SIGKILL)
				return
			case <-exited:
				return
			}
		}
	}(said)
	waited := make(chan error, 1)
	go func() {
		err := cmd.Wait()
		close(exited)
		// Leftover children keep stdout open; the turn is over for them.
		syscall.Kill(-pgid, syscall.SIGKILL)
		waited <- err
	}()

	lastWord := false
	readErr := readLines(r, func(line []byte) {
		if onLine(line) && !lastWord {
			lastWord = true
			close(said)
		}
	})
	waitErr := <-waited
	<-logged
	x := exit{code: cmd.ProcessState.ExitCode(), cancelled: killed.Load()}
	if lingered.Load() && !x.cancelled {
		x.lingered = grace
	}
	var ee *exec.ExitError
	switch {
	case readErr != nil:
		x.err = readErr
	case waitErr != nil && !errors.As(waitErr, &ee):
		x.err = waitErr
	}
	x.stderr = tail(stderr.end, p.secrets)
	return x
}

// cappedWriter writes to w until n bytes were written and then discards
// the rest, reporting it written; end keeps the last 4*stderrTail bytes
// of everything, kept or not.
type cappedWriter struct {
	w   io.Writer
	n   int64
	end []byte
}

func (c *cappedWriter) Write(b []byte) (int, error) {
	const keep = 4 * stderrTail
	if len(b) >= keep {
		c.end = append(c.end[:0], b[len(b)-keep:]...)
	} else {
		if over := len(c.end) + len(b) - keep; over > 0 {
			c.end = append(c.end[:0], c.end[over:]...)
		}
		c.end = append(c.end, b...)
	}
	if c.n <= 0 {
		return len(b), nil
	}
	n, err := c.w.Write(b[:min(int64(len(b)), c.n)])
	c.n -= int64(n)
	if err != nil {
		c.n = 0 // a log that cannot be written is not worth failing the turn
	}
	return len(b), nil
}

// readLines calls onLine for every line of r, without its "\n" or
// "\r\n"; a last line without one is delivered too. A line over maxLine
// ends the reading with an error matching bufio.ErrTooLong and the rest
// is drained. The cost is linear in the output: each byte is searched
// for '\n' once, however the harness splits its writes (bufio.Scanner
// searched the whole line so far after every read, quadratic in a long
// line written a little at a time).
func readLines(r io.Reader, onLine func([]byte)) error {
	br := bufio.NewReaderSize(r, 64<<10)
	var long []byte // a line longer than br's buffer, gathered
	for {
		chunk, err := br.ReadSlice('\n')
		line := chunk
		if len(long) > 0 || errors.Is(err, bufio.ErrBufferFull) {
			if len(long)+len(chunk) > maxLine+2 { // room for "\r\n"
				io.Copy(io.Discard, br)
				return fmt.Errorf("reading the harness output: a line over %d bytes: %w", maxLine, bufio.ErrTooLong)
			}
			long = append(long, chunk...)
			if errors.Is(err, bufio.ErrBufferFull) {
				continue
			}
			line = long
		}
		read := len(line) > 0 // an unterminated last line, even "\r", is one
		line = bytes.TrimSuffix(line, []byte("\n"))
		line = bytes.TrimSuffix(line, []byte("\r"))
		if len(line) > maxLine {
			io.Copy(io.Discard, br)
			return fmt.Errorf("reading the harness output: a line over %d bytes: %w", maxLine, bufio.ErrTooLong)
		}
		if err == nil || read {
			onLine(line)
		}
		long = long[:0]
		switch {
		case err == nil:
		case errors.Is(err, io.EOF):
			return nil
		default:
			io.Copy(io.Discard, br)
			return fmt.Errorf("reading the harness output: %w", err)
		}
	}
}

// tail is the redacted end of standard error, trimmed.
func tail(end []byte, secrets []string) string {
	s := strings.ToValidUTF8(string(redact(end, secrets)), "\uFFFD")
	s = strings.TrimSpace(s)
	if len(s) > stderrTail {
		s = "…" + s[len(s)-stderrTail:]
		s = strings.ToValidUTF8(s, "")
	}
	return s
}
