package supervise

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/agentrt/agentrt/internal/regularfile"
)

const (
	// MaxControlFileBytes bounds one control file another process may
	// write into a run dir (a steer request or acknowledgement, a
	// cancellation record, the run cancellation request): a larger one is
	// refused unread with a *ControlFileError.
	MaxControlFileBytes = 1 << 20
	// MaxCancelRequestsBytes bounds cancellations/requests.ndjson.
	// CancelWorker refuses to append past it, and a larger file (written
	// by something else) is refused with a *ControlFileError.
	MaxCancelRequestsBytes = 4 << 20
	// MaxControlText bounds each operator text of a cancellation — its
	// reason, operator and source — in bytes. JSON-escaped (up to six
	// bytes a byte) all three stay inside MaxControlFileBytes, so the
	// request and its acknowledgement are always files the supervisor
	// reads: a larger text is refused with ErrInvalidControl rather than
	// written where no supervisor could read it, leaving the run
	// impossible to cancel.
	MaxControlText = 32 << 10
)

// checkControlText refuses a cancellation's text (named what) longer
// than MaxControlText.
func checkControlText(what, v string) error {
	if len(v) > MaxControlText {
		return fmt.Errorf("%w: the %s is %d bytes, over %d", ErrInvalidControl, what, len(v), MaxControlText)
	}
	return nil
}

// ControlFileError reports a control file of a run dir that cannot be
// used: larger than its limit (Size is what the file held when it was
// refused), or damaged (Err says how: torn or not what the file should
// hold). This package writes every whole control file atomically, so a
// damaged one was written by something else.
type ControlFileError struct {
	Path        string
	Size, Limit int64
	// Err is why a damaged file's content does not decode; nil for an
	// oversized file.
	Err error
}

func (e *ControlFileError) Error() string {
	if e.Err != nil {
		return fmt.Sprintf("supervise: %s is damaged (%v); move it aside or start a new run dir", e.Path, e.Err)
	}
	return fmt.Sprintf("supervise: %s holds %d bytes, over its limit of %d; remove it or start a new run dir", e.Path, e.Size, e.Limit)
}

// Unwrap returns why a damaged file does not decode.
func (e *ControlFileError) Unwrap() error { return e.Err }

// readBounded reads the file at path, refusing one over limit bytes and
// one that is not a regular file (a *ControlFileError either way; a FIFO
// is refused, not waited on: regularfile.Open).
func readBounded(path string, limit int64) ([]byte, error) {
	f, _, err := openControl(path, limit)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(data)) > limit {
		size := int64(len(data))
		if st, err := f.Stat(); err == nil {
			size = st.Size()
		}
		return nil, &ControlFileError{Path: path, Size: size, Limit: limit}
	}
	return data, nil
}

// readCancelRequestsFrom reads the cancellation requests log from byte
// offset off on, tolerantly (a blank, torn or corrupt line is skipped),
// and returns its requests in order, repeats included, with the offset
// just past its last complete line: a scan that passes that offset back
// reads only what was appended since, so its cost follows the new lines,
// not the log's length. tail says whether an unterminated last line is
// decoded too (a whole read); a scan leaves it for the next scan, which
// sees it completed. A missing log holds nothing; one over
// MaxCancelRequestsBytes is a *ControlFileError.
func readCancelRequestsFrom(runDir string, off int64, tail bool) ([]CancelRequest, int64, error) {
	path := filepath.Join(runDir, CancelRequestsFile)
	// A FIFO here is refused, not waited on (that would hold the
	// control scan, and the run's end, for ever).
	f, st, err := openControl(path, MaxCancelRequestsBytes)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, off, nil
	}
	if err != nil {
		if _, bad := errors.AsType[*ControlFileError](err); bad {
			return nil, off, err
		}
		return nil, off, fmt.Errorf("supervise: reading cancellation requests: %w", err)
	}
	defer f.Close()
	size := st.Size()
	if size > MaxCancelRequestsBytes {
		return nil, off, &ControlFileError{Path: path, Size: size, Limit: MaxCancelRequestsBytes}
	}
	if size < off {
		off = 0 // replaced by a shorter file: read it whole
	}
	data := make([]byte, size-off)
	if _, err := io.ReadFull(io.NewSectionReader(f, off, size-off), data); err != nil {
		return nil, off, fmt.Errorf("supervise: reading cancellation requests: %w", err)
	}
	out, end := parseCancelLines(data, tail)
	return out, off + int64(end), nil
}

// parseCancelLines decodes the lines of data, tolerantly (a blank, torn
// or corrupt line is skipped), and returns the requests in order, repeats
// included, with end, the length of data up to its last "\n". An
// unterminated last line is decoded only when tail is set.
func parseCancelLines(data []byte, tail bool) (out []CancelRequest, end int) {
	end = bytes.LastIndexByte(data, '\n') + 1
	if !tail {
		data = data[:end]
	}
	for line := range bytes.SplitSeq(data, []byte("\n")) {
		var r CancelRequest
		if len(bytes.TrimSpace(line)) == 0 || json.Unmarshal(line, &r) != nil || validOperationID(r.OperationID) != nil || r.Worker == "" {
			continue
		}
		out = append(out, r)
	}
	return out, end
}

// cancelLineBytes is how many bytes req takes as a line of the
// requests log (at most one more when a torn line is closed first).
func cancelLineBytes(req CancelRequest) int {
	data, _ := json.Marshal(req)
	return len(data) + 2
}

// openControl opens the control file at path through regularfile.Open:
// one that is not a regular file is a *ControlFileError.
func openControl(path string, limit int64) (*os.File, fs.FileInfo, error) {
	f, st, err := regularfile.Open(path)
	if _, odd := errors.AsType[*regularfile.NotRegularError](err); odd {
		return nil, nil, &ControlFileError{Path: path, Limit: limit, Err: err}
	}
	return f, st, err
}
