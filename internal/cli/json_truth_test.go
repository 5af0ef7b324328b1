package cli_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// TR11: what the supervise-family commands print for machines (--json)
// is one JSON document on stdout that decodes strictly into the shape
// their help documents, a number nobody knows is null (never 0), and the
// exit status says whether a winner was delivered (DESIGN principle 2;
// spec §3.6 spentTotal, usdKnown, spendGaps; behaviour 43).

// strictJSON decodes out, a command's whole stdout, into a T with unknown
// members refused, and fails t unless out is exactly one JSON document.
func strictJSON[T any](t *testing.T, out string) T {
	t.Helper()
	var v T
	dec := json.NewDecoder(strings.NewReader(out))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&v); err != nil {
		t.Fatalf("stdout does not decode strictly as the documented shape: %v\n%s", err, out)
	}
	var extra json.RawMessage
	if err := dec.Decode(&extra); !errors.Is(err, io.EOF) {
		t.Fatalf("stdout holds more than one JSON document (next: %s, %v):\n%s", extra, err, out)
	}
	return v
}

// superviseDoc is agentrt supervise --json as its help documents it:
// agentrt's members and beside them the spec's SupervisedResult (§3.6).
type superviseDoc struct {
	RunID               string            `json:"runId"`
	Status              string            `json:"status"`
	Kind                string            `json:"kind"`
	Out                 *string           `json:"out"`
	OutRef              *string           `json:"outRef"`
	Verdict             *verdictDoc       `json:"verdict"`
	Winner              *winnerDoc        `json:"winner"`
	Reason              *string           `json:"reason"`
	DownCount           *int              `json:"downCount"`
	Source              *string           `json:"source"`
	CancellationReason  *string           `json:"cancellationReason"`
	OperationID         *string           `json:"operationId"`
	Error               *errorDoc         `json:"error"`
	Cancellation        *cancellationDoc  `json:"cancellation"`
	TeardownUnconfirmed []json.RawMessage `json:"teardownUnconfirmed"`
	Workers             []workerDoc       `json:"workers"`
	Spent               agentrtSpentDoc   `json:"spent"`
	Manager             agentrtSpentDoc   `json:"manager"`
	SpendGaps           []spendGapDoc     `json:"spendGaps"`
	Resumed             bool              `json:"resumed"`
	MS                  int64             `json:"ms"`
	RunDir              string            `json:"runDir"`
	ProgressStop        json.RawMessage   `json:"progressStop"`
	Continuation        json.RawMessage   `json:"continuation"`
	Tree                treeDoc           `json:"tree"`
	SpentTotal          specSpendDoc      `json:"spentTotal"`
	SpentBreakdown      struct {
		DriverInference specSpendDoc `json:"driverInference"`
		ChildWork       specSpendDoc `json:"childWork"`
	} `json:"spentBreakdown"`
	JournalIncomplete *struct {
		Count *int `json:"count"`
		Lost  []struct {
			Kind string  `json:"kind"`
			Node *string `json:"node"`
		} `json:"lost"`
		Error string `json:"error"`
	} `json:"journalIncomplete"`
}

type verdictDoc struct {
	Passed bool     `json:"passed"`
	Reason *string  `json:"reason"`
	Score  *float64 `json:"score"`
	Valid  bool     `json:"valid"`
	Notes  *string  `json:"notes"`
}

type winnerDoc struct {
	Node      string      `json:"node"`
	Text      string      `json:"text"`
	Out       string      `json:"out"`
	Submitted bool        `json:"submitted"`
	OutRef    *string     `json:"outRef"`
	Verdict   *verdictDoc `json:"verdict"`
}

type errorDoc struct {
	Name    string `json:"name"`
	Message string `json:"message"`
}

type cancellationDoc struct {
	Source             string  `json:"source"`
	CancellationReason string  `json:"cancellationReason"`
	OperationID        *string `json:"operationId"`
}

type workerDoc struct {
	ID              string          `json:"id"`
	Label           string          `json:"label"`
	Profile         string          `json:"profile"`
	State           string          `json:"state"`
	Delivered       bool            `json:"delivered"`
	Replayed        bool            `json:"replayed"`
	InDoubt         bool            `json:"inDoubt"`
	InDoubtReason   *string         `json:"inDoubtReason"`
	Verdict         *verdictDoc     `json:"verdict"`
	Reason          *string         `json:"reason"`
	CheckError      *string         `json:"checkError"`
	BudgetViolation json.RawMessage `json:"budgetViolation"`
}

// agentrtSpentDoc is agentrt's own spend member: each channel null when
// unknown, and what the run's budget charged for it (ceilings included).
type agentrtSpentDoc struct {
	Tokens     *int64   `json:"tokens"`
	Iterations *int64   `json:"iterations"`
	USD        *float64 `json:"usd"`
	Charged    struct {
		Tokens     *int64   `json:"tokens"`
		Iterations *int64   `json:"iterations"`
		USD        *float64 `json:"usd"`
	} `json:"charged"`
}

type spendGapDoc struct {
	ID       string   `json:"id"`
	Label    *string  `json:"label"`
	Kind     string   `json:"kind"`
	Channels []string `json:"channels"`
}

// specSpendDoc is the spec's Spend (§2.1) as agentrt prints it.
type specSpendDoc struct {
	Iterations      *int64 `json:"iterations"`
	IterationsKnown bool   `json:"iterationsKnown"`
	Tokens          struct {
		Total *int64 `json:"total"`
	} `json:"tokens"`
	TokensKnown bool     `json:"tokensKnown"`
	USD         *float64 `json:"usd"`
	USDKnown    bool     `json:"usdKnown"`
	MS          *int64   `json:"ms"`
	Resources   map[string]struct {
		Amount *int64 `json:"amount"`
		Known  bool   `json:"known"`
	} `json:"resources"`
}

type treeDoc struct {
	Root  string `json:"root"`
	Nodes []struct {
		ID      string  `json:"id"`
		Parent  *string `json:"parent"`
		Label   string  `json:"label"`
		Status  string  `json:"status"`
		Runtime *string `json:"runtime"`
		Budget  struct {
			MaxIterations *int64   `json:"maxIterations"`
			MaxTokens     *int64   `json:"maxTokens"`
			MaxUSD        *float64 `json:"maxUsd"`
		} `json:"budget"`
		Spent           specSpendDoc    `json:"spent"`
		OutRef          *string         `json:"outRef"`
		BudgetViolation json.RawMessage `json:"budgetViolation"`
	} `json:"nodes"`
	InFlight int `json:"inFlight"`
	Waiting  int `json:"waiting"`
}

// checkSpentNulls fails t when a channel of s reads as known (a number
// beside it, or its charge a 0) while the result says it is unknown.
func checkSpentNulls(t *testing.T, what string, s agentrtSpentDoc, tokensKnown, usdKnown bool) {
	t.Helper()
	if !usdKnown {
		if s.USD != nil {
			t.Errorf("%s.usd %v, want null: the dollars are unknown", what, *s.USD)
		}
		if s.Charged.USD != nil && *s.Charged.USD == 0 {
			t.Errorf("%s.charged.usd 0 beside usd null: a 0 that reads as known (nothing was charged for unknown dollars: null)", what)
		}
	}
	if !tokensKnown {
		if s.Tokens != nil {
			t.Errorf("%s.tokens %v, want null: the tokens are unknown", what, *s.Tokens)
		}
		if s.Charged.Tokens != nil && *s.Charged.Tokens == 0 {
			t.Errorf("%s.charged.tokens 0 beside tokens null", what)
		}
	}
}

// A pool without a dollar ceiling, whose manager and worker report no
// dollars: spentTotal.usd is null with usdKnown false and both named in
// spendGaps (behaviour 43), and agentrt's spent and manager members say
// usd null and charged.usd null — nothing was charged for the unknown
// dollars, so no 0 reads as a known spend. The run delivered: exit 0.
func TestSuperviseJSONNoDollarCeilingChargesNoZero(t *testing.T) {
	script := managerScript(t, `{"turns": [`+spawnNote+`, `+awaitOne+`, `+answerDone+`]}`)
	dir := t.TempDir()
	out, errOut, code := runBinary(t, superviseArgs(t, script, dir, "--json")...)
	if code != 0 {
		t.Fatalf("exit %d, want 0 (a delivered winner)\n%s%s", code, out, errOut)
	}
	doc := strictJSON[superviseDoc](t, out)
	if doc.Kind != "winner" || doc.Winner == nil {
		t.Fatalf("kind %q, want winner:\n%s", doc.Kind, out)
	}
	if doc.SpentTotal.USDKnown || doc.SpentTotal.USD != nil {
		t.Errorf("spentTotal usd %v usdKnown %v, want null and false", doc.SpentTotal.USD, doc.SpentTotal.USDKnown)
	}
	gapped := map[string]bool{}
	for _, g := range doc.SpendGaps {
		for _, ch := range g.Channels {
			gapped[g.ID+" "+ch] = true
		}
	}
	if !gapped["rel usd"] || !gapped["rel:s1 usd"] {
		t.Errorf("spendGaps %+v, want the manager (rel) and the worker (rel:s1) on usd", doc.SpendGaps)
	}
	checkSpentNulls(t, "spent", doc.Spent, doc.SpentTotal.TokensKnown, doc.SpentTotal.USDKnown)
	checkSpentNulls(t, "manager", doc.Manager, doc.SpentBreakdown.DriverInference.TokensKnown, doc.SpentBreakdown.DriverInference.USDKnown)
	if doc.Manager.Tokens == nil || *doc.Manager.Tokens != 110 || doc.Manager.Charged.Tokens == nil || *doc.Manager.Charged.Tokens != 110 {
		t.Errorf("manager tokens %v charged %v, want 110 known", doc.Manager.Tokens, doc.Manager.Charged.Tokens)
	}
	if doc.RunDir != dir {
		t.Errorf("runDir %q, want %q", doc.RunDir, dir)
	}
}

// A key given by environment never reaches what the run prints or
// keeps: not stdout, not stderr, not a file of the run dir, not the run
// store — neither when the run succeeds nor when the endpoint refuses
// the key and echoes it back in its error, as a misconfigured proxy
// does (DESIGN principle 2; spec §9). The endpoint saw the key, so the
// run used it.
func TestSuperviseSecretsStayOut(t *testing.T) {
	const key = "sk-tr11-secret-4c1d9a"
	for _, tc := range []struct {
		name     string
		echo     bool // the endpoint answers 401 echoing the key
		wantCode int
	}{
		{"delivered", false, 0},
		{"the endpoint echoes the key in a 401", true, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newCostEndpoint(t, "alpha")
			var mu sync.Mutex
			var sawKey bool
			e.reply = func(w http.ResponseWriter, r *http.Request, _ string, _ int) bool {
				mu.Lock()
				sawKey = sawKey || r.Header.Get("Authorization") == "Bearer "+key
				mu.Unlock()
				if !tc.echo {
					return false
				}
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(http.StatusUnauthorized)
				fmt.Fprintf(w, `{"error": {"message": "Incorrect API key provided: %s", "type": "invalid_request_error", "code": "invalid_api_key"}}`, key)
				return true
			}
			e.Start()
			mgr := writeFile(t, "manager.json", `{"name": "manager", "harness": "cli-base", "model": {"default": "gpt-manager"},
				"tools": {"agent_runtime_coordination_spawn_worker": true, "agent_runtime_coordination_await_event": true}}`)
			wrk := writeFile(t, "writer.json", `{"name": "writer", "harness": "cli-base", "model": {"default": "gpt-writer"}}`)
			dir, db := t.TempDir(), filepath.Join(t.TempDir(), "runs.db")
			ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
			defer cancel()
			cmd := exec.CommandContext(ctx, buildAgentrt(t), "supervise", mgr, "--worker", wrk, "--task", "write the notes",
				"--provider", "openai", "--base-url", e.URL+"/v1/", "--expect", "DONE", "--run-id", "keys", "--run-dir", dir,
				"--db", db, "--budget-tokens", "5000", "--worker-tokens", "1000", "--iterations", "4", "--json")
			cmd.Env = append(os.Environ(), "OPENAI_API_KEY="+key)
			var out, errOut bytes.Buffer
			cmd.Stdout, cmd.Stderr = &out, &errOut
			code := 0
			if err := cmd.Run(); err != nil {
				var ee *exec.ExitError
				if !errors.As(err, &ee) {
					t.Fatal(err)
				}
				code = ee.ExitCode()
			}
			if code != tc.wantCode {
				t.Fatalf("exit %d, want %d\n%s%s", code, tc.wantCode, out.String(), errOut.String())
			}
			doc := strictJSON[superviseDoc](t, out.String())
			if tc.echo && (doc.Kind != "no-winner" || doc.Error == nil) {
				t.Errorf("kind %q error %+v, want no-winner with the driver's error", doc.Kind, doc.Error)
			}
			mu.Lock()
			if !sawKey {
				t.Error("the endpoint never saw the key: the run did not use it")
			}
			mu.Unlock()
			for what, b := range map[string][]byte{"stdout": out.Bytes(), "stderr": errOut.Bytes()} {
				if bytes.Contains(b, []byte(key)) {
					t.Errorf("%s holds the key:\n%s", what, b)
				}
			}
			for _, root := range []string{dir, filepath.Dir(db)} {
				err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
					if err != nil || d.IsDir() {
						return err
					}
					b, err := os.ReadFile(p)
					if err != nil {
						return err
					}
					if bytes.Contains(b, []byte(key)) {
						t.Errorf("%s holds the key", p)
					}
					return nil
				})
				if err != nil {
					t.Fatal(err)
				}
			}
		})
	}
}
