package search

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

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
	// Description is DescribeArtifact's scrubbed descriptor of the
	// output, for a search measurement.
	Description string `json:"description,omitzero"`
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
	// TrainingReceipts are the method's own, in ModeTraining.
	TrainingReceipts []TrainingReceipt `json:"trainingReceipts,omitzero"`
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
	// status is the run's ResumeStatus; superseded the path an
	// incompatible journal was moved to.
	status     ResumeStatus
	superseded string
}

// ResumeStatus says what a run made of its run dir.
type ResumeStatus string

// Resume statuses, as Provenance records them.
const (
	// ResumeFresh: there was no journal (or no run dir); the run started
	// one.
	ResumeFresh ResumeStatus = "fresh"
	// ResumeResumed: the run dir held a journal of the same recipe, whose
	// measurements were reused.
	ResumeResumed ResumeStatus = "resumed"
	// ResumeRestarted: the run dir held a journal of another recipe;
	// with resume if-compatible it was moved aside (Provenance.Superseded)
	// and the run started fresh.
	ResumeRestarted ResumeStatus = "restarted"
)

// openRunLog opens dir's journal for the recipe: a new journal starts
// with the recipe; an existing one must carry the same recipe digest.
func openRunLog(ctx context.Context, dir string, mode Resume, recipe canonjson.Value, recipeDigest string) (*runLog, resumed, error) {
	prior := resumed{measurements: map[string]measurement{}, status: ResumeFresh}
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
				if mode == ResumeRequired {
					return nil, prior, &ResumeError{RunDir: dir, Reason: fmt.Sprintf("resume is required but it holds another recipe (%s, this run is %s); use --resume if-compatible to start fresh, or the recipe's own run dir", d.Str(), recipeDigest)}
				}
				return restartRunLog(ctx, dir, mode, recipe, recipeDigest, d.Str())
			}
			prior.found = true
			prior.status = ResumeResumed
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

// restartRunLog moves dir's journal of another recipe aside, keeping it
// for audit under a name that says which recipe it held, and opens a
// fresh journal for this one.
func restartRunLog(ctx context.Context, dir string, mode Resume, recipe canonjson.Value, recipeDigest, old string) (*runLog, resumed, error) {
	tag := "unknown"
	if canonjson.IsDigest(old) {
		tag = strings.TrimPrefix(old, "sha256:")[:12]
	}
	from := filepath.Join(dir, JournalFile)
	for n := 0; ; n++ {
		to := filepath.Join(dir, fmt.Sprintf("improve.superseded-%s-%d.jsonl", tag, n))
		if _, err := os.Lstat(to); err == nil {
			if n >= 1000 {
				return nil, resumed{}, &ResumeError{RunDir: dir, Reason: "too many superseded journals; use a new run dir"}
			}
			continue
		}
		if err := os.Rename(from, to); err != nil {
			return nil, resumed{}, fmt.Errorf("search: run dir: moving the journal of another recipe aside: %w", err)
		}
		l, prior, err := openRunLog(ctx, dir, mode, recipe, recipeDigest)
		if err != nil {
			return nil, prior, err
		}
		prior.status, prior.superseded = ResumeRestarted, to
		return l, prior, nil
	}
}

// provenance is the run's provenance before it searched.
func (r *run) provenance() Provenance {
	return Provenance{Method: r.o.Method.Identity(), RecipeDigest: r.recipeDigest, BaseDigest: r.baseDigest,
		Resumed: r.prior.found, RunDir: r.o.RunDir, Resume: r.o.Resume, ResumeStatus: r.prior.status,
		Superseded: r.prior.superseded, Mode: r.o.Mode}
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
