package cli

import (
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/agentrt/agentrt/retained"
	"github.com/agentrt/agentrt/store"
	"github.com/agentrt/agentrt/store/sqlite"
)

// envCredentialKey names the environment variable holding the key of
// the seat credential digests retained runs record (at least
// retained.MinCredentialKeySize bytes; retained.StartOptions.CredentialKey).
// It wins over a SQLite store's key file (credentialKey).
const envCredentialKey = "AGENTRT_CREDENTIAL_KEY"

// credentialKeySuffix ends the name of a SQLite store's credential key
// file, kept beside its database.
const credentialKeySuffix = ".credential-key"

// credentialKeyFileSize is the size of the key file agentrt writes: 32
// random bytes.
const credentialKeyFileSize = retained.MinCredentialKeySize

// credentialKey is the key of the seat credential digests retained runs
// on s record (agentrt run --retain) and check (agentrt runs recover),
// so that a recovery refuses a profile whose account selector for the
// run's stage changed since its admission (RG-12): $AGENTRT_CREDENTIAL_KEY
// when set; otherwise, on the embedded SQLite store, the store's own key
// in the file beside its database, created by the first command that
// needs it; otherwise (PostgreSQL, shared by machines that share no
// file) nil, and no digest is recorded. The key is never printed or
// logged.
func credentialKey(s store.Store) ([]byte, error) {
	if k := os.Getenv(envCredentialKey); k != "" {
		if len(k) < retained.MinCredentialKeySize {
			return nil, usage("$%s has %d bytes; the key needs at least %d", envCredentialKey, len(k), retained.MinCredentialKeySize)
		}
		return []byte(k), nil
	}
	ss, ok := s.(*sqlite.Store)
	if !ok {
		return nil, nil
	}
	key, err := storeCredentialKey(ss.Path() + credentialKeySuffix)
	if err != nil {
		return nil, &exitError{code: ExitFailed, err: err}
	}
	return key, nil
}

// CredentialKeyFileError is a SQLite store's credential key file that
// cannot be used: not a file, readable by others than its owner, or not
// the size of a key agentrt wrote. Problem says which, and what to do.
type CredentialKeyFileError struct {
	Path    string
	Problem string
}

func (e *CredentialKeyFileError) Error() string {
	return fmt.Sprintf("the run store's credential key file %s %s", e.Path, e.Problem)
}

// storeCredentialKey is the key in the file at path, which it creates
// when there is none: 32 random bytes, written whole to a new file of
// its own (O_EXCL, mode 0600) and linked into place, which fails when
// the name exists — of two processes creating it at once one key wins,
// never a partly written one, and both read that key back.
func storeCredentialKey(path string) ([]byte, error) {
	key, err := readCredentialKeyFile(path)
	if !errors.Is(err, fs.ErrNotExist) {
		return key, err
	}
	var fresh [credentialKeyFileSize]byte
	if _, err := rand.Read(fresh[:]); err != nil {
		return nil, fmt.Errorf("making the run store's credential key: %w", err)
	}
	// A file of this attempt's own: os.CreateTemp opens it O_EXCL, mode
	// 0600.
	f, err := os.CreateTemp(filepath.Dir(path), filepath.Base(path)+".*.tmp")
	if err != nil {
		return nil, fmt.Errorf("making the run store's credential key file in %s: %w", filepath.Dir(path), err)
	}
	tmp := f.Name()
	defer os.Remove(tmp)
	_, err = f.Write(fresh[:])
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return nil, fmt.Errorf("writing the run store's credential key file %s: %w", tmp, err)
	}
	if err := os.Link(tmp, path); err != nil && !errors.Is(err, fs.ErrExist) {
		return nil, fmt.Errorf("making the run store's credential key file %s: %w (or set $%s)", path, err, envCredentialKey)
	}
	return readCredentialKeyFile(path)
}

// readCredentialKeyFile reads the key in the file at path: an error
// wrapping fs.ErrNotExist when there is none, a *CredentialKeyFileError
// when it is not one agentrt would use.
func readCredentialKeyFile(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("reading the run store's credential key file: %w", err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("reading the run store's credential key file: %w", err)
	}
	switch {
	case !fi.Mode().IsRegular():
		return nil, &CredentialKeyFileError{Path: path, Problem: fmt.Sprintf("is not a file (%s); move it away, or set $%s", fi.Mode().Type(), envCredentialKey)}
	case fi.Mode().Perm()&0o077 != 0:
		return nil, &CredentialKeyFileError{Path: path, Problem: fmt.Sprintf("has mode %#o: others than its owner may read it; chmod 600 %s", fi.Mode().Perm(), path)}
	case fi.Size() != credentialKeyFileSize:
		return nil, &CredentialKeyFileError{Path: path, Problem: fmt.Sprintf("has %d bytes, not the %d of the key agentrt wrote; restore it from a copy, or set $%s to the key the store's retained runs were started with (a new key makes their account unverifiable, never sent)",
			fi.Size(), credentialKeyFileSize, envCredentialKey)}
	}
	key := make([]byte, credentialKeyFileSize)
	if _, err := io.ReadFull(f, key); err != nil {
		return nil, fmt.Errorf("reading the run store's credential key file %s: %w", path, err)
	}
	return key, nil
}
