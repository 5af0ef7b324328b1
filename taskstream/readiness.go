package taskstream

import (
	"context"
	"fmt"
	"math"
)

// DefaultMinimumReadinessScore is the readiness score below which a
// ready report is only a caveat.
const DefaultMinimumReadinessScore = 0.7

// Requirement is a piece of knowledge a task needs.
type Requirement struct {
	ID          string `json:"id"`
	Description string `json:"description,omitzero"`
}

// Readiness is a knowledge provider's report on a task: how ready it is
// (0 to 1), why, and what is missing — blocking or not.
type Readiness struct {
	Score           float64       `json:"readinessScore"`
	Reason          string        `json:"reason"`
	BlockingMissing []Requirement `json:"blockingMissingRequirements"`
	NonBlockingGaps []Requirement `json:"nonBlockingGaps"`
}

// Readiness decisions.
const (
	DecisionReady   = "ready"
	DecisionCaveat  = "caveat"
	DecisionBlocked = "blocked"
)

// Decision is the gate's verdict on a readiness report.
type Decision struct {
	Passed            bool     `json:"passed"`
	Status            string   `json:"status"`
	Reason            string   `json:"reason"`
	Score             float64  `json:"readinessScore"`
	BlockingGapIDs    []string `json:"blockingGapIds"`
	NonBlockingGapIDs []string `json:"nonBlockingGapIds"`
}

// Decide gates a report: blocked when a blocking requirement is missing,
// a caveat (not passed, not blocked: the task runs) when the score is
// below minimum, ready otherwise. minimum must be in [0, 1].
func Decide(r Readiness, minimum float64) (Decision, error) {
	if math.IsNaN(minimum) || minimum < 0 || minimum > 1 {
		return Decision{}, fmt.Errorf("taskstream: the minimum readiness score must be in [0, 1], not %v", minimum)
	}
	d := Decision{Reason: r.Reason, Score: r.Score, BlockingGapIDs: ids(r.BlockingMissing), NonBlockingGapIDs: ids(r.NonBlockingGaps)}
	switch {
	case len(r.BlockingMissing) > 0:
		d.Status = DecisionBlocked
	case r.Score < minimum:
		d.Status = DecisionCaveat
		d.Reason = fmt.Sprintf("Knowledge readiness score %.3f is below minimum %.3f.", r.Score, minimum)
	default:
		d.Passed, d.Status = true, DecisionReady
	}
	return d, nil
}

func ids(rs []Requirement) []string {
	out := make([]string, 0, len(rs))
	for _, r := range rs {
		out = append(out, r.ID)
	}
	return out
}

// Question asks the user for a missing requirement.
type Question struct {
	ID       string `json:"id"`
	Question string `json:"question"`
}

// AcquisitionPlan is a plan to acquire a missing requirement.
type AcquisitionPlan struct {
	RequirementID string `json:"requirementId"`
	Description   string `json:"description,omitzero"`
	Blocking      bool   `json:"blocking"`
}

// Knowledge reports a task's knowledge readiness. A provider may also
// implement QuestionAnswerer, Acquirer and Refresher.
type Knowledge interface {
	Readiness(ctx context.Context, task Task) (Readiness, error)
}

// QuestionAnswerer answers the questions the blocking gaps raise;
// answers are keyed by question id.
type QuestionAnswerer interface {
	AnswerQuestions(ctx context.Context, questions []Question, task Task) (map[string]string, error)
}

// Acquirer executes acquisition plans and returns the evidence ids it
// acquired.
type Acquirer interface {
	Acquire(ctx context.Context, plans []AcquisitionPlan, task Task) ([]string, error)
}

// Refresher re-scores readiness once answers or evidence arrived.
type Refresher interface {
	RefreshReadiness(ctx context.Context, task Task, previous Readiness, answers map[string]string, evidenceIDs []string) (Readiness, error)
}

func questionsFor(r Readiness) []Question {
	var qs []Question
	for _, req := range r.BlockingMissing {
		q := req.Description
		if q == "" {
			q = "Please provide: " + req.ID
		}
		qs = append(qs, Question{ID: req.ID, Question: q})
	}
	return qs
}

func plansFor(r Readiness) []AcquisitionPlan {
	var ps []AcquisitionPlan
	for _, req := range r.BlockingMissing {
		ps = append(ps, AcquisitionPlan{RequirementID: req.ID, Description: req.Description, Blocking: true})
	}
	for _, req := range r.NonBlockingGaps {
		ps = append(ps, AcquisitionPlan{RequirementID: req.ID, Description: req.Description})
	}
	return ps
}
