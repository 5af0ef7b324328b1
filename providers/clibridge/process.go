package clibridge

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync/atomic"
	"syscall"
)

// maxLine bounds one stdout line of a harness; a longer line fails the
// turn (the rest of the output is drained, not read).
const maxLine = 32 << 20

// stderrTail is how much of the end of standard error a failure reports.
const stderrTail = 2000

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
}

// run runs p once, in a new process group. onLine receives every stdout line, in order,
// on the calling goroutine. When ctx ends first, the whole process group
// is killed and the exit says cancelled. Whatever happens, the group is
// killed once the harness exits, so no child it left behind survives the
// turn.
func run(ctx context.Context, p proc, onLine func([]byte)) exit {
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
	cmd := exec.Command(p.binary, p.args...)
	cmd.Dir, cmd.Env = p.dir, p.env
	cmd.Stdin = strings.NewReader(p.stdin)
	cmd.Stdout, cmd.Stderr = w, errFile
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		w.Close()
		return exit{code: -1, err: err}
	}
	w.Close()
	pgid := cmd.Process.Pid
	if p.onSpawn != nil {
		p.onSpawn(pgid)
	}

	var killed atomic.Bool
	exited := make(chan struct{})
	go func() {
		select {
		case <-ctx.Done():
			killed.Store(true)
			syscall.Kill(-pgid, syscall.SIGKILL)
		case <-exited:
		}
	}()
	waited := make(chan error, 1)
	go func() {
		err := cmd.Wait()
		close(exited)
		// Leftover children keep stdout open; the turn is over for them.
		syscall.Kill(-pgid, syscall.SIGKILL)
		waited <- err
	}()

	readErr := readLines(r, onLine)
	waitErr := <-waited
	x := exit{code: cmd.ProcessState.ExitCode(), cancelled: killed.Load()}
	var ee *exec.ExitError
	switch {
	case readErr != nil:
		x.err = readErr
	case waitErr != nil && !errors.As(waitErr, &ee):
		x.err = waitErr
	}
	x.stderr = tail(errFile, p.secrets)
	return x
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

// tail is the redacted end of the stderr log, trimmed.
func tail(f *os.File, secrets []string) string {
	info, err := f.Stat()
	if err != nil {
		return ""
	}
	off := max(info.Size()-4*stderrTail, 0)
	b := make([]byte, info.Size()-off)
	n, _ := f.ReadAt(b, off)
	s := strings.ToValidUTF8(string(redact(b[:n], secrets)), "\uFFFD")
	s = strings.TrimSpace(s)
	if len(s) > stderrTail {
		s = "…" + s[len(s)-stderrTail:]
		s = strings.ToValidUTF8(s, "")
	}
	return s
}
