package workspace

import (
	"context"
	"errors"
	"fmt"
	"strings"
)

// Access is what a memory operation does: read it or change it.
type Access uint8

// Accesses a MemoryPolicy authorizes. Forgetting a memory is a Write.
const (
	Read Access = iota + 1
	Write
)

// String returns "read" or "write".
func (a Access) String() string {
	switch a {
	case Read:
		return "read"
	case Write:
		return "write"
	}
	return "unknown"
}

// MemoryPolicy decides what the memory tools may do for a turn.
// Implementations must be safe for concurrent use.
type MemoryPolicy interface {
	// Authorize returns nil when turn may access the memory at path (a
	// valid /memories/ path), or an error saying why not.
	Authorize(turn ActiveTurn, access Access, path string) error
	// Admit vets content about to be stored at path. A non-nil error
	// vetoes the write: nothing is written.
	Admit(ctx context.Context, turn ActiveTurn, path string, content []byte) error
}

// AdmitFunc is a product's content hook: it returns an error to veto
// storing content at path for turn.
type AdmitFunc func(ctx context.Context, turn ActiveTurn, path string, content []byte) error

// ErrNotAuthorized is what the default policy's refusals match.
var ErrNotAuthorized = errors.New("workspace: not authorized")

// DefaultMemoryPolicy returns the default authority: every member of a
// tenant may read and write the shared workspace memories
// (/memories/workspace/…) and its own member memories
// (/memories/members/<itself>/…), and no other member's. admit, when not
// nil, is the product's content hook; its veto writes nothing.
func DefaultMemoryPolicy(admit AdmitFunc) MemoryPolicy { return defaultPolicy{admit: admit} }

type defaultPolicy struct{ admit AdmitFunc }

// Authorize allows the workspace scope and the turn's own member scope.
func (p defaultPolicy) Authorize(turn ActiveTurn, access Access, path string) error {
	if err := ValidatePath(path); err != nil {
		return err
	}
	if access != Read && access != Write {
		return ErrNotAuthorized
	}
	switch {
	case strings.HasPrefix(path, RootMemories+"/workspace/"):
		return nil
	case strings.HasPrefix(path, RootMemories+"/members/"+turn.Member+"/"):
		return nil
	case strings.HasPrefix(path, RootMemories+"/members/"):
		return fmt.Errorf("%w: a member may %s only its own member memories", ErrNotAuthorized, access)
	}
	return fmt.Errorf("%w: %s is not a memory", ErrNotAuthorized, path)
}

// Admit defers to the product's hook, if any.
func (p defaultPolicy) Admit(ctx context.Context, turn ActiveTurn, path string, content []byte) error {
	if p.admit == nil {
		return nil
	}
	return p.admit(ctx, turn, path, content)
}
