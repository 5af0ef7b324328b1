package taskstream

import (
	"context"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/agentrt/agentrt/canonjson"
)

// Session statuses.
const (
	SessionActive    = "active"
	SessionCompleted = "completed"
	SessionFailed    = "failed"
	SessionAborted   = "aborted"
)

// Session is a backend session a task ran in.
type Session struct {
	ID          string                     `json:"id"`
	Backend     string                     `json:"backend"`
	Status      string                     `json:"status"`
	ResumeToken string                     `json:"resumeToken,omitzero"`
	CreatedAt   time.Time                  `json:"createdAt"`
	UpdatedAt   time.Time                  `json:"updatedAt"`
	Metadata    map[string]canonjson.Value `json:"metadata,omitzero"`
}

// SessionStore keeps sessions and the events emitted in them.
type SessionStore interface {
	// Get returns the session, or nil when there is none.
	Get(ctx context.Context, id string) (*Session, error)
	Put(ctx context.Context, s Session) error
	AppendEvent(ctx context.Context, sessionID string, e Event) error
}

// MemorySessionStore is a SessionStore in memory, safe for concurrent
// use. The zero value is ready.
type MemorySessionStore struct {
	mu       sync.Mutex
	sessions map[string]Session
	events   map[string][]Event
}

// Get implements SessionStore.
func (m *MemorySessionStore) Get(_ context.Context, id string) (*Session, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	s, ok := m.sessions[id]
	if !ok {
		return nil, nil
	}
	s.Metadata = maps.Clone(s.Metadata)
	return &s, nil
}

// Put implements SessionStore.
func (m *MemorySessionStore) Put(_ context.Context, s Session) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.sessions == nil {
		m.sessions = make(map[string]Session)
	}
	s.Metadata = maps.Clone(s.Metadata)
	m.sessions[s.ID] = s
	return nil
}

// AppendEvent implements SessionStore.
func (m *MemorySessionStore) AppendEvent(_ context.Context, sessionID string, e Event) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.events == nil {
		m.events = make(map[string][]Event)
	}
	m.events[sessionID] = append(m.events[sessionID], e)
	return nil
}

// Events returns the events recorded for a session.
func (m *MemorySessionStore) Events(sessionID string) []Event {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Clone(m.events[sessionID])
}
