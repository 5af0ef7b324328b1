package search

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/journal"
	"github.com/agentrt/agentrt/ledger"
)

// JournalFile is the run journal's name inside Options.RunDir.
const JournalFile = "improve.jsonl"

// Journal record types.
const (
	recRecipe      = "recipe"
	recMeasurement = "measurement"
	recMethod      = "method"
)

// measurement is one measured (candidate, case) cell, as journaled.
type measurement struct {
	Type        string    `json:"type"`
	Candidate   string    `json:"candidate"`
	Case        string    `json:"case"`
	CaseDigest  string    `json:"caseDigest"`
	Phase       string    `json:"phase"`
	Score       float64   `json:"score"`
	JudgeScores []float64 `json:"judgeScores"`
	AgentCost   amount    `json:"agentCost"`
	JudgeCost   amount    `json:"judgeCost"`
	RunID       string    `json:"runId,omitzero"`
	OutputBytes int64     `json:"outputBytes"`
	// The run's observed facts, for the contract's run receipts.
	OutputDigest    string  `json:"outputDigest"`
	InputTokens     *int64  `json:"inputTokens,omitzero"`
	OutputTokens    *int64  `json:"outputTokens,omitzero"`
	CachedTokens    *int64  `json:"cachedTokens,omitzero"`
	ReasoningTokens *int64  `json:"reasoningTokens,omitzero"`
	ModelCalls      *int64  `json:"modelCalls,omitzero"`
	StartedAtMs     float64 `json:"startedAtMs"`
	EndedAtMs       float64 `json:"endedAtMs"`
	JudgedAtMs      float64 `json:"judgedAtMs"`
}

// known returns a known token count, nil otherwise.
func known(a ledger.Amount[int64]) *int64 {
	if !a.Known() {
		return nil
	}
	v := a.Value
	return &v
}

// methodRecord is a method's finished answer, as journaled.
type methodRecord struct {
	Type       string            `json:"type"`
	Selected   canonjson.Value   `json:"selected,omitzero"`
	Rationale  string            `json:"rationale,omitzero"`
	Cost       amount            `json:"cost"`
	RunIDs     []string          `json:"runIds,omitzero"`
	Provenance map[string]string `json:"provenance,omitzero"`
	// Population is the search's candidate population when it ended.
	Population []PopulationEntry `json:"population,omitzero"`
}

// amount is a ledger.Amount[float64] in a journal record.
type amount struct {
	USD      float64 `json:"usd"`
	Reported bool    `json:"reported"`
	Complete bool    `json:"complete"`
}

func toAmount(a ledger.Amount[float64]) amount {
	return amount{USD: a.Value, Reported: a.Reported, Complete: a.Complete}
}

func (a amount) ledger() ledger.Amount[float64] {
	return ledger.Amount[float64]{Value: a.USD, Reported: a.Reported, Complete: a.Complete}
}

// cellKey identifies a measurement: the candidate profile and the case's
// content (so an edited case is measured again).
func cellKey(candidateDigest, caseDigest string) string { return candidateDigest + "\x00" + caseDigest }

// runLog is a run's journal, or nothing when there is no run dir.
type runLog struct {
	j *journal.Journal
}

// resumed is what a run dir already held for this recipe.
type resumed struct {
	measurements map[string]measurement
	order        []string // keys in journal order
	method       *methodRecord
	found        bool
}

// openRunLog opens dir's journal for the recipe: a new journal starts
// with the recipe; an existing one must carry the same recipe digest.
func openRunLog(ctx context.Context, dir string, mode Resume, recipe canonjson.Value, recipeDigest string) (*runLog, resumed, error) {
	prior := resumed{measurements: map[string]measurement{}}
	if dir == "" {
		if mode == ResumeRequired {
			return &runLog{}, prior, &ResumeError{RunDir: dir, Reason: "resume is required but no run dir was given"}
		}
		return &runLog{}, prior, nil
	}
	path := filepath.Join(dir, JournalFile)
	_, statErr := os.Stat(path)
	exists := statErr == nil
	if statErr != nil && !errors.Is(statErr, fs.ErrNotExist) {
		return nil, prior, fmt.Errorf("search: run dir: %w", statErr)
	}
	if !exists && mode == ResumeRequired {
		return nil, prior, &ResumeError{RunDir: dir, Reason: "resume is required but the run dir holds no journal"}
	}
	j, err := journal.Open(path, journal.Options{CreateDir: true})
	if err != nil {
		return nil, prior, fmt.Errorf("search: run dir: %w", err)
	}
	l := &runLog{j: j}
	first := true
	for e, err := range j.Read(ctx, 1) {
		if err != nil {
			var ce *journal.CorruptError
			if errors.As(err, &ce) && !first {
				continue // that cell is measured again
			}
			j.Close()
			return nil, prior, &ResumeError{RunDir: dir, Reason: "the journal cannot be read: " + err.Error()}
		}
		typ, _ := e.Value.Get("type")
		if first {
			first = false
			d, _ := e.Value.Get("digest")
			if typ.Str() != recRecipe || d.Str() != recipeDigest {
				j.Close()
				return nil, prior, &ResumeError{RunDir: dir, Reason: fmt.Sprintf("it holds another recipe (%s, this run is %s); use a new run dir", d.Str(), recipeDigest)}
			}
			prior.found = true
			continue
		}
		switch typ.Str() {
		case recMeasurement:
			var m measurement
			if canonjson.FromValue(e.Value, &m) == nil {
				key := cellKey(m.Candidate, m.CaseDigest)
				if _, dup := prior.measurements[key]; !dup {
					prior.order = append(prior.order, key)
				}
				prior.measurements[key] = m
			}
		case recMethod:
			var m methodRecord
			if canonjson.FromValue(e.Value, &m) == nil {
				prior.method = &m
			}
		}
	}
	if first {
		rec := canonjson.ObjectValue([]canonjson.Member{
			{Name: "type", Value: canonjson.StringValue(recRecipe)},
			{Name: "digest", Value: canonjson.StringValue(recipeDigest)},
			{Name: "recipe", Value: recipe},
		})
		if _, err := j.Append(ctx, rec); err != nil {
			j.Close()
			return nil, prior, fmt.Errorf("search: run dir: %w", err)
		}
	}
	return l, prior, nil
}

// append journals one record; without a run dir it does nothing.
func (l *runLog) append(ctx context.Context, x any) error {
	if l.j == nil {
		return nil
	}
	v, err := canonjson.ToValue(x)
	if err != nil {
		return fmt.Errorf("search: journal record: %w", err)
	}
	if _, err := l.j.Append(ctx, v); err != nil {
		return fmt.Errorf("search: journal: %w", err)
	}
	return nil
}

func (l *runLog) close() error {
	if l.j == nil {
		return nil
	}
	return l.j.Close()
}
