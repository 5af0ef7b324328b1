package retained

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"

	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/contract"
	"github.com/agentrt/agentrt/harness"
	"github.com/agentrt/agentrt/profile"
)

// MinCredentialKeySize is the least number of bytes of a CredentialKey.
const MinCredentialKeySize = 32

// credentialDigestPrefix names the digest's algorithm in the record.
const credentialDigestPrefix = "hmac-sha256:"

// credentialPurpose separates the credential digest from every other
// digest of the same key.
const credentialPurpose = "agentrt.retained.credential/v1"

// credentialKeyPurpose is the fixed text whose keyed digest names a
// key (Intent.CredentialKeyID).
const credentialKeyPurpose = "agentrt.retained.credential-key-id/v1"

// credentialKeyID names key without telling anything of it: the first
// 8 bytes of HMAC-SHA256 under key of a fixed text, in hex — enough to
// tell one key from another, not to find either.
func credentialKeyID(key []byte) string {
	mac := hmac.New(sha256.New, key)
	mac.Write([]byte(credentialKeyPurpose))
	return credentialDigestPrefix + hex.EncodeToString(mac.Sum(nil)[:8])
}

// credentialForm is what the credential digest binds: the stage's
// credential request without its occasion (the create's and the turn's
// are the same request), under the digest's purpose.
type credentialForm struct {
	Purpose  string               `json:"purpose"`
	Stage    int                  `json:"stage"`
	Harness  harness.Type         `json:"harness"`
	Provider string               `json:"provider"`
	Model    string               `json:"model"`
	Selector profile.SeatSelector `json:"selector"`
}

// credentialDigest is the keyed digest of c that an intent records
// (Intent.CredentialDigest): HMAC-SHA256 under key over the canonical
// JSON of c without its occasion. It is keyed because a selector names
// an account from a small set (a plain hash of one is found by trying
// each name); without the key the digest tells nothing of the account.
func credentialDigest(key []byte, c *contract.CredentialRequest) (string, error) {
	if len(key) < MinCredentialKeySize {
		return "", fmt.Errorf("%w: CredentialKey has %d bytes; it needs at least %d", ErrInvalidOptions, len(key), MinCredentialKeySize)
	}
	v, err := canonjson.ToValue(credentialForm{Purpose: credentialPurpose, Stage: c.Stage, Harness: c.Harness,
		Provider: c.Provider, Model: c.Model, Selector: c.Selector})
	if err != nil {
		return "", fmt.Errorf("%w: the credential request has no canonical form: %w", ErrInvalidOptions, err)
	}
	mac := hmac.New(sha256.New, key)
	mac.Write(canonjson.Marshal(v))
	return credentialDigestPrefix + hex.EncodeToString(mac.Sum(nil)), nil
}

// admittedCredential records on in the credential request c its turn
// carries: its stage (Intent.CredentialStage) and, when the caller gave
// a key, its keyed digest (Intent.CredentialDigest). Without a key no
// digest is recorded, and a recovery cannot tell the account the run
// was admitted under from another (as for a record made before digests
// were).
func admittedCredential(in *Intent, c *contract.CredentialRequest, key []byte) error {
	if c == nil {
		return nil
	}
	k := c.Stage
	in.CredentialStage = &k
	if len(key) == 0 {
		return nil
	}
	d, err := credentialDigest(key, c)
	if err != nil {
		return err
	}
	id := credentialKeyID(key)
	in.CredentialDigest, in.CredentialKeyID = &d, &id
	return nil
}

// checkAdmittedCredential is the one check that the credential request
// c a recovery is about to send — the caller's, or the one rebuilt from
// the profile as it reads now — is the one the run was admitted with
// (RG-12): for the stage the intent names (a *MismatchError otherwise)
// and, when the intent recorded a credential digest, asking for the same
// account (a *CredentialChangedError otherwise, which names the stage
// and never the selector). An intent without a digest — made before
// digests were recorded, or by a caller that gave no key — is checked
// for its stage only.
func checkAdmittedCredential(in Intent, c *contract.CredentialRequest, key []byte) error {
	k := in.CredentialStage
	if k == nil || c == nil {
		return nil
	}
	if c.Stage != *k {
		return &MismatchError{What: "credential request of the " + c.Occasion, Field: "credentialStage", Want: fmt.Sprint(*k), Got: fmt.Sprint(c.Stage)}
	}
	want := in.CredentialDigest
	if want == nil {
		return nil
	}
	if len(key) == 0 {
		return fmt.Errorf("%w: the run was admitted with a keyed digest of seat stage %d's credential request; give the CredentialKey it was admitted with to check the account before anything is sent", ErrInvalidOptions, *k)
	}
	got, err := credentialDigest(key, c)
	if err != nil {
		return err
	}
	keyKnown := in.CredentialKeyID != nil
	if keyKnown && credentialKeyID(key) != *in.CredentialKeyID {
		return &CredentialKeyError{RunID: in.RunID, Stage: *k}
	}
	if !hmac.Equal([]byte(got), []byte(*want)) {
		return &CredentialChangedError{RunID: in.RunID, Stage: *k, Occasion: c.Occasion, KeyChecked: keyKnown}
	}
	return nil
}

// CredentialKeyError refuses a recovery given a CredentialKey other than
// the one the run was admitted with (Intent.CredentialKeyID): the
// account its credential request asks for cannot be checked, so nothing
// is sent. Give the admitted key. errors.Is matches ErrInvalidOptions.
type CredentialKeyError struct {
	// RunID is the run-store record of the run; Stage the seat stage it
	// was admitted on.
	RunID string
	Stage int
}

func (e *CredentialKeyError) Error() string {
	return fmt.Sprintf("retained: run %s was admitted under another CredentialKey than the one given, so the account of seat stage %d's credential request cannot be checked; give the key it was admitted with (the CLI's $AGENTRT_CREDENTIAL_KEY, else its SQLite store's key file) — nothing was sent",
		e.RunID, e.Stage)
}

// Is makes errors.Is match ErrInvalidOptions.
func (e *CredentialKeyError) Is(target error) bool { return target == ErrInvalidOptions }

// resendCredential is the credential request a recovery sends on
// occasion for an admission that carried one (in.CredentialStage): the
// caller's (given, from the option named field), else the one rebuilt
// from the seated profile prof for the admitted stage — either checked
// to be the admitted one (checkAdmittedCredential). None is refused:
// the admitted request is never sent without it.
func resendCredential(in Intent, given *contract.CredentialRequest, prof *profile.Profile, key []byte, occasion, field string) (*contract.CredentialRequest, error) {
	k := *in.CredentialStage
	c := given
	if c == nil && prof != nil {
		if c = contract.CredentialRequestFor(prof, k, occasion); c == nil {
			return nil, fmt.Errorf("%w: the profile has no seat stage %d, whose credential request the admission carried", ErrInvalidOptions, k)
		}
	}
	if c == nil {
		return nil, fmt.Errorf("%w: the admission carried seat stage %d's credential request; give it in %s or the seated profile in Profile", ErrInvalidOptions, k, field)
	}
	if err := checkAdmittedCredential(in, c, key); err != nil {
		return nil, err
	}
	return c, nil
}

// ErrCredentialChanged matches every *CredentialChangedError.
var ErrCredentialChanged = errors.New("retained: the seat's account selector is not the one admitted")

// CredentialChangedError refuses a recovery whose credential request
// for the admitted seat stage — the caller's, or the one rebuilt from
// the profile — does not digest to the one recorded at admission
// (Intent.CredentialDigest): the stage's account selector changed (or,
// in a record that names no key, the key may not be the admitted one; a
// record that names its key refuses another as a *CredentialKeyError).
// Nothing was sent
// under the other account, and nothing was destroyed. It names the
// stage, never a selector. errors.Is matches ErrCredentialChanged and
// ErrMismatch.
type CredentialChangedError struct {
	// RunID is the run-store record of the run; Stage the seat stage it
	// was admitted on; Occasion the request that was refused
	// (contract.CredentialOnCreate or contract.CredentialOnTurn).
	RunID    string
	Stage    int
	Occasion string
	// KeyChecked says the key was the admitted one (the record names its
	// key, Intent.CredentialKeyID): the selector changed. False for a
	// record made before key ids were, where either may have.
	KeyChecked bool
}

func (e *CredentialChangedError) Error() string {
	why := "its account selector differs"
	if !e.KeyChecked {
		why += ", or the CredentialKey is not the admitted one"
	}
	return fmt.Sprintf("retained: the %s credential request of seat stage %d of run %s does not ask for the account the run was admitted with (%s); nothing was sent with it",
		e.Occasion, e.Stage, e.RunID, why)
}

// Is makes errors.Is match ErrCredentialChanged and ErrMismatch.
func (e *CredentialChangedError) Is(target error) bool {
	return target == ErrCredentialChanged || target == ErrMismatch
}
