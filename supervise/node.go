package supervise

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// NodeID names a node of a supervised tree: the root's id, then one
// ":s<seq>" segment per generation (§3.6 "<parent>:s<seq>").
type NodeID string

// ChildID returns the deterministic id of the child admitted with scope
// sequence seq under parent.
func ChildID(parent NodeID, seq int) NodeID {
	return NodeID(string(parent) + ":s" + strconv.Itoa(seq))
}

// Parent returns the id of n's parent and false for a root id.
func (n NodeID) Parent() (NodeID, bool) {
	i := strings.LastIndex(string(n), ":s")
	if i < 0 {
		return "", false
	}
	if _, err := strconv.Atoi(string(n[i+2:])); err != nil {
		return "", false
	}
	return n[:i], true
}

// within reports whether n is root or a node of root's subtree.
func (n NodeID) within(root NodeID) bool {
	return n == root || strings.HasPrefix(string(n), string(root)+":s")
}

// seq returns the scope sequence number n's last segment names, and
// false for a root id.
func (n NodeID) seq() (int, bool) {
	i := strings.LastIndex(string(n), ":s")
	if i < 0 {
		return 0, false
	}
	v, err := strconv.Atoi(string(n[i+2:]))
	return v, err == nil && v > 0
}

// State is a node's lifecycle state (§3.6 "Node lifecycle").
type State string

// The lifecycle states. Done, failed and cancelled are terminal.
const (
	StatePending   State = "pending"
	StateAcquiring State = "acquiring"
	StateRunning   State = "running"
	StateWaiting   State = "waiting"
	StateDone      State = "done"
	StateFailed    State = "failed"
	StateCancelled State = "cancelled"
)

// Terminal reports whether s is done, failed or cancelled.
func (s State) Terminal() bool {
	return s == StateDone || s == StateFailed || s == StateCancelled
}

// Live reports whether s is a state a node still holds a slot in.
func (s State) Live() bool {
	switch s {
	case StatePending, StateAcquiring, StateRunning, StateWaiting:
		return true
	}
	return false
}

// legal lists every permitted transition. A node is admitted pending,
// may spend real time acquiring a box, runs, may wait (and be woken back
// to running), and ends exactly once in a terminal state.
var legal = map[State][]State{
	StatePending:   {StateAcquiring, StateRunning, StateWaiting, StateDone, StateFailed, StateCancelled},
	StateAcquiring: {StateRunning, StateFailed, StateCancelled},
	StateRunning:   {StateWaiting, StateDone, StateFailed, StateCancelled},
	StateWaiting:   {StateRunning, StateDone, StateFailed, StateCancelled},
}

// CanTransition reports whether a node in s may move to to.
func (s State) CanTransition(to State) bool {
	for _, t := range legal[s] {
		if t == to {
			return true
		}
	}
	return false
}

// ErrUnknownNode: no node of the scope has the given id.
var ErrUnknownNode = errors.New("supervise: unknown node")

// ErrScopeClosed: the scope has settled (Close returned); its nodes no
// longer move.
var ErrScopeClosed = errors.New("supervise: scope settled")

// TransitionError is an illegal lifecycle move; nothing changed.
type TransitionError struct {
	Node     NodeID
	From, To State
}

func (e *TransitionError) Error() string {
	return fmt.Sprintf("supervise: node %s cannot move from %s to %s", e.Node, e.From, e.To)
}
