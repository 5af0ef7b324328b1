package localproc

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"

	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/contract"
)

// ErrRecord is wrapped by every refusal of a persisted record that does
// not decode or validate: a damaged state directory is reported, never
// guessed around.
var ErrRecord = errors.New("localproc: invalid persisted record")

// recordVersion is the version of every on-disk record this package
// writes.
const recordVersion = 1

// envRecord is an environment's persisted identity (env.json): its id,
// the create input it was made from (with its idempotency key) and that
// input's digest, and its lifetime.
type envRecord struct {
	V           int64                            `json:"v"`
	ID          string                           `json:"id"`
	Digest      string                           `json:"digest"`
	CreatedAtMs int64                            `json:"createdAtMs"`
	ExpiresAtMs int64                            `json:"expiresAtMs"`
	Input       contract.CreateExactProcessInput `json:"input"`
}

// procRecord is a process's persisted start (start.json): its
// environment-local pid, the host pid and the host's start time of that
// pid (to tell the process from a later one reusing the pid), when it
// started and its timeout.
type procRecord struct {
	V          int64 `json:"v"`
	PID        int64 `json:"pid"`
	HostPID    int64 `json:"hostPid"`
	StartTicks int64 `json:"startTicks"`
	StartedMs  int64 `json:"startedAtMs"`
	TimeoutMs  int64 `json:"timeoutMs"`
}

var envIDPattern = regexp.MustCompile(`^lp-[0-9a-f]{32}$`)

// newEnvID returns a fresh random environment id.
func newEnvID() (string, error) {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", fmt.Errorf("localproc: environment id: %w", err)
	}
	return "lp-" + hex.EncodeToString(b[:]), nil
}

// encodeRecord is the canonical JSON of a record.
func encodeRecord(x any) ([]byte, error) {
	v, err := canonjson.ToValue(x)
	if err != nil {
		return nil, fmt.Errorf("localproc: encode record: %w", err)
	}
	b, err := canonjson.Canonical(v)
	if err != nil {
		return nil, fmt.Errorf("localproc: encode record: %w", err)
	}
	return b, nil
}

// decodeStrict decodes data into dst: strict JSON, no unknown or missing
// members.
func decodeStrict(data []byte, dst any) error {
	v, err := canonjson.Decode(data)
	if err != nil {
		return fmt.Errorf("%w: %w", ErrRecord, err)
	}
	if err := canonjson.FromValue(v, dst); err != nil {
		return fmt.Errorf("%w: %w", ErrRecord, err)
	}
	return nil
}

// decodeEnvRecord decodes and validates env.json: the input must be a
// valid exact create input whose digest is the recorded one, and the
// lifetime must agree with it.
func decodeEnvRecord(data []byte) (*envRecord, error) {
	rec := new(envRecord)
	if err := decodeStrict(data, rec); err != nil {
		return nil, err
	}
	if rec.V != recordVersion {
		return nil, fmt.Errorf("%w: environment record version %d", ErrRecord, rec.V)
	}
	if !envIDPattern.MatchString(rec.ID) {
		return nil, fmt.Errorf("%w: environment id %q", ErrRecord, rec.ID)
	}
	digest, err := contract.CreateExactProcessInputDigest(&rec.Input)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrRecord, err)
	}
	if digest != rec.Digest {
		return nil, fmt.Errorf("%w: environment %s: the input digest is %s, the record says %s", ErrRecord, rec.ID, digest, rec.Digest)
	}
	if rec.CreatedAtMs < 0 || rec.ExpiresAtMs != rec.CreatedAtMs+rec.Input.MaxLifetimeMs {
		return nil, fmt.Errorf("%w: environment %s: inconsistent lifetime", ErrRecord, rec.ID)
	}
	return rec, nil
}

// decodeProcRecord decodes and validates start.json.
func decodeProcRecord(data []byte) (*procRecord, error) {
	rec := new(procRecord)
	if err := decodeStrict(data, rec); err != nil {
		return nil, err
	}
	switch {
	case rec.V != recordVersion:
		return nil, fmt.Errorf("%w: process record version %d", ErrRecord, rec.V)
	case rec.PID <= 0, rec.HostPID <= 0, rec.HostPID > 1<<22:
		return nil, fmt.Errorf("%w: process record pid %d (host %d)", ErrRecord, rec.PID, rec.HostPID)
	case rec.StartTicks < 0, rec.StartedMs < 0, rec.TimeoutMs < 0:
		return nil, fmt.Errorf("%w: process record %d: negative time", ErrRecord, rec.PID)
	}
	return rec, nil
}

// decodeTermRecord decodes and validates term.json, a
// contract.ProcessTermination.
func decodeTermRecord(data []byte) (*contract.ProcessTermination, error) {
	t, err := contract.ParseProcessTermination(data)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrRecord, err)
	}
	return t, nil
}

// writeFileAtomic writes data to path through a temporary file in the
// same directory, synced and renamed: readers see the old or the new
// file, never a part.
func writeFileAtomic(path string, data []byte) error {
	tmp, err := writeTemp(path, data)
	if err != nil {
		return err
	}
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("localproc: %w", err)
	}
	return nil
}

// writeFileFirst writes data to path unless path already exists: the
// first writer wins, atomically (a hard link never replaces). It reports
// whether this call won.
func writeFileFirst(path string, data []byte) (bool, error) {
	tmp, err := writeTemp(path, data)
	if err != nil {
		return false, err
	}
	defer os.Remove(tmp)
	if err := os.Link(tmp, path); err != nil {
		if errors.Is(err, os.ErrExist) {
			return false, nil
		}
		return false, fmt.Errorf("localproc: %w", err)
	}
	return true, nil
}

func writeTemp(path string, data []byte) (string, error) {
	f, err := os.CreateTemp(filepath.Dir(path), ".tmp-"+filepath.Base(path)+"-*")
	if err != nil {
		return "", fmt.Errorf("localproc: %w", err)
	}
	_, werr := f.Write(data)
	serr := f.Sync()
	cerr := f.Close()
	if err := errors.Join(werr, serr, cerr); err != nil {
		os.Remove(f.Name())
		return "", fmt.Errorf("localproc: %w", err)
	}
	return f.Name(), nil
}
