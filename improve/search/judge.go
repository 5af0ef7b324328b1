package search

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os/exec"
	"strings"
	"time"

	"github.com/agentrt/agentrt/contract"
	"github.com/agentrt/agentrt/ledger"
	"github.com/agentrt/agentrt/schema"
)

// Contains scores 1 when the output contains the expected answer
// (compared case-insensitively, surrounding space trimmed), else 0. It
// spends nothing.
type Contains struct{}

// Name implements Judge.
func (Contains) Name() string { return "contains" }

// Score implements Judge.
func (Contains) Score(_ context.Context, sc Scenario, out Output) (Score, error) {
	ok := strings.Contains(strings.ToLower(out.Text), strings.ToLower(strings.TrimSpace(sc.Expected)))
	return Score{Value: boolScore(ok), CostUSD: ledger.ExactAmount(0.0)}, nil
}

// Exact scores 1 when the output, surrounding space trimmed, equals the
// expected answer, else 0. It spends nothing.
type Exact struct{}

// Name implements Judge.
func (Exact) Name() string { return "exact" }

// Score implements Judge.
func (Exact) Score(_ context.Context, sc Scenario, out Output) (Score, error) {
	ok := strings.TrimSpace(out.Text) == strings.TrimSpace(sc.Expected)
	return Score{Value: boolScore(ok), CostUSD: ledger.ExactAmount(0.0)}, nil
}

func boolScore(ok bool) float64 {
	if ok {
		return 1
	}
	return 0
}

// MaxJudgeOutput bounds what a Command judge may print.
const MaxJudgeOutput = 64 << 10

// Command is a judge that runs a program (no shell): it writes
// {"id","input","expected","output"} as JSON to the program's standard
// input and reads {"score": 0..1, "costUsd"?: n} from its standard output.
// A verdict without costUsd has an unknown cost (so the run holds); a
// non-zero exit, a timeout or a malformed verdict is an error.
type Command struct {
	// Argv is the program and its arguments.
	Argv []string
	// Timeout bounds one verdict (default 30 seconds).
	Timeout time.Duration
}

// Name implements Judge: "cmd:" and the program's arguments.
func (c Command) Name() string { return "cmd:" + strings.Join(c.Argv, " ") }

// Score implements Judge.
func (c Command) Score(ctx context.Context, sc Scenario, out Output) (Score, error) {
	if len(c.Argv) == 0 {
		return Score{}, errors.New("the judge command is empty")
	}
	timeout := c.Timeout
	if timeout <= 0 {
		timeout = 30 * time.Second
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	in, err := json.Marshal(map[string]string{"id": sc.ID, "input": sc.Input, "expected": sc.Expected, "output": out.Text})
	if err != nil {
		return Score{}, err
	}
	cmd := exec.CommandContext(ctx, c.Argv[0], c.Argv[1:]...)
	cmd.Stdin = bytes.NewReader(in)
	var stdout, stderr limitedBuffer
	stdout.max, stderr.max = MaxJudgeOutput, 4<<10
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	cmd.WaitDelay = time.Second
	if err := cmd.Run(); err != nil {
		if ctx.Err() != nil {
			return Score{}, fmt.Errorf("the judge command gave no verdict within %s", timeout)
		}
		return Score{}, fmt.Errorf("the judge command failed: %w (stderr: %q)", err, strings.TrimSpace(stderr.String()))
	}
	if stdout.over {
		return Score{}, fmt.Errorf("the judge command printed more than %d bytes", MaxJudgeOutput)
	}
	return ParseVerdict(stdout.Bytes())
}

// verdictSchema is a Command judge's verdict.
var verdictSchema = schema.Object(
	schema.Req("score", schema.Number(schema.Min(0), schema.Max(1))),
	schema.Opt("costUsd", schema.Number(schema.NonNegative)),
)

// ParseVerdict decodes a Command judge's verdict strictly: a refusal is
// a *schema.Error with JSON-pointer issues.
func ParseVerdict(data []byte) (Score, error) {
	v, err := contract.Parse[struct {
		Score   float64  `json:"score"`
		CostUSD *float64 `json:"costUsd,omitzero"`
	}]("JudgeVerdict", verdictSchema, bytes.TrimSpace(data))
	if err != nil {
		return Score{}, err
	}
	s := Score{Value: v.Score}
	if v.CostUSD != nil {
		s.CostUSD = ledger.ExactAmount(*v.CostUSD)
	}
	return s, nil
}

// limitedBuffer keeps the first max bytes written and notes the rest.
type limitedBuffer struct {
	bytes.Buffer
	max  int
	over bool
}

func (b *limitedBuffer) Write(p []byte) (int, error) {
	if room := b.max - b.Len(); len(p) > room {
		b.over = true
		if room > 0 {
			b.Buffer.Write(p[:room])
		}
		return len(p), nil
	}
	return b.Buffer.Write(p)
}
