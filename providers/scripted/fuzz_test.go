package scripted

import (
	"context"
	"fmt"
	"iter"
	"testing"

	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/contract"
)

// FuzzParseScript: the script decoder never panics; a script it accepts
// yields a valid capability document, binds every interaction step to a
// run, and survives a round trip through its canonical JSON.
func FuzzParseScript(f *testing.F) {
	for _, seed := range []string{
		`{"turns":[]}`,
		`{"servedModel":"m","turns":[{"match":"/a+/","repeat":true,"end":"failed","error":"x","steps":[{"text":"t"},{"usage":{"inputTokens":1,"outputTokens":2},"mode":"delta"},{"delayMs":1}]}]}`,
		`{"turns":[{"steps":[{"interaction":{"request":{"id":"q","kind":"question","title":"Q","answerSpec":{"fields":[{"type":"text","name":"a","label":"A"}]}}}}]}]}`,
		`{"turns":[{"steps":[{"interaction":{"unreachable":true,"request":{"id":"p","kind":"permission","title":"P","timeoutMs":5,"onTimeout":"fail","answerSpec":{"fields":[{"type":"select","name":"grant","label":"G","options":[{"value":"allow_once","label":"O"}]}]}}}}]}]}`,
		`{"turns":[{"steps":[{"interaction":{"request":{"id":"v","kind":"acme.review","title":"V","answerSpec":{"fields":[]},"binding":{}}}}]}]}`,
		`{"turns":[{"steps":[{"toolCall":{"id":"c","name":"n","arguments":{}}},{"result":{"k":[1,2]}}]}],"exec":[{"match":"/^ls/","exitCode":3,"stdout":"o","stderr":"e"}]}`,
		`{"turns":[],"exec":[{"match":""}]}`,
		`{"turns":[{"steps":[{"delayMs":9223372036854}]}]}`,
		`{"turns":[{"steps":[{"delayMs":9223372036855}]}]}`,
		`{"turns":[],"processes":[{"executable":"/bin/x","output":[{"delayMs":9007199254740991}]}]}`,
		`{"turns":[{"steps":[{"interaction":{"request":{"id":"d","kind":"question","title":"D","answerSpec":{"fields":[]}}}},{"interaction":{"request":{"id":"d","kind":"question","title":"D","answerSpec":{"fields":[]}}}}]}]}`,
	} {
		f.Add([]byte(seed))
	}
	for _, seed := range processSeeds {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := ParseScript(data)
		if err != nil {
			return
		}
		for _, turn := range s.Turns {
			for _, step := range turn.Steps {
				if step.DelayMS != nil && (*step.DelayMS < 0 || *step.DelayMS > MaxDelayMS) {
					t.Fatalf("an accepted delay of %d ms does not fit a time.Duration", *step.DelayMS)
				}
			}
		}
		for _, rule := range s.Processes {
			for _, step := range rule.Output {
				if step.DelayMS != nil && (*step.DelayMS < 0 || *step.DelayMS > MaxDelayMS) {
					t.Fatalf("an accepted process delay of %d ms does not fit a time.Duration", *step.DelayMS)
				}
			}
		}
		p := New(s, Options{})
		caps, _ := p.Capabilities(context.Background())
		if err := caps.Validate(); err != nil {
			t.Fatalf("an accepted script yields an invalid capability document: %v", err)
		}
		run := contract.InteractionExecutionBinding{RunID: "r", Provider: "scripted", EnvironmentID: "e", SessionID: "s", ExecutionID: "x"}
		for _, turn := range s.Turns {
			for _, step := range turn.Steps {
				if step.Interaction == nil {
					continue
				}
				if _, err := bindInteraction(step.Interaction.Request, run); err != nil {
					t.Fatalf("an accepted interaction step does not bind: %v", err)
				}
			}
		}
		v, err := canonjson.ToValue(s)
		if err != nil {
			t.Fatal(err)
		}
		b, err := canonjson.Canonical(v)
		if err != nil {
			t.Fatal(err)
		}
		again, err := ParseScript(b)
		if err != nil {
			t.Fatalf("the canonical form of an accepted script is refused: %v\n%s", err, b)
		}
		d1, _ := contract.DigestOf(s)
		d2, _ := contract.DigestOf(again)
		if d1 != d2 {
			t.Fatalf("a round trip changed the script:\n%s", b)
		}
	})
}

// processSeeds are scripts with a processes section, valid and not.
var processSeeds = []string{
	`{"turns":[],"processes":[{"executable":"/bin/echo","args":["a b"],"output":[{"stdout":"a b\\n"}]}]}`,
	`{"turns":[],"processes":[{"executable":"/bin/x","output":[{"stderr":"e"},{"delayMs":100000},{"stdout":"{{stdin}}{{env:HOME}}"}],"signal":"SIGTERM"}]}`,
	`{"turns":[],"processes":[{"executable":"/srv/d","args":[],"image":"r/i@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef","output":[],"hang":true}]}`,
	`{"turns":[],"processes":[{"executable":"/bin/f","output":[],"exitCode":-3},{"executable":"/bin/f","args":["x"],"output":[{"stdout":"shadowed"}]}]}`,
	`{"turns":[],"processes":[{"executable":"bin/relative","output":[]}]}`,
	`{"turns":[],"processes":[{"executable":"/bin/two","output":[],"exitCode":1,"signal":"SIGKILL"}]}`,
	`{"turns":[],"processes":[{"executable":"/bin/tag","image":"r/i:latest","output":[]}]}`,
	`{"turns":[],"processes":[{"executable":"/bin/step","output":[{"stdout":"a","stderr":"b"}]}]}`,
	`{"turns":[],"processes":[{"executable":"/bin/sig","output":[],"signal":"kill"}]}`,
}

// FuzzProcessRules: the processes section is parsed strictly, and every
// rule a script is accepted with answers a launch of its own executable
// and argv in an environment of its image (never refused), deterministic
// to the end: killed at once, the process's status agrees with Wait, its
// termination is valid, and a recovered handle replays its exact output.
func FuzzProcessRules(f *testing.F) {
	for _, seed := range processSeeds {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := ParseScript(data)
		if err != nil || len(s.Processes) == 0 {
			return
		}
		ctx := context.Background()
		p := New(s, Options{})
		caps, _ := p.Capabilities(ctx)
		facet := p.ExactProcess()
		if caps.ExactProcess == nil || facet == nil {
			t.Fatal("a script with processes does not offer and declare them")
		}
		for i, rule := range s.Processes {
			in := &contract.CreateExactProcessInput{
				Image:  "fuzz/image@sha256:0000000000000000000000000000000000000000000000000000000000000000",
				Egress: contract.EgressPolicy{Mode: contract.EgressBlocked}, MaxLifetimeMs: 60_000,
				Resources: contract.ExactProcessResources{CPU: 1, MemoryMB: 1, DiskMB: 1},
				Metadata:  map[string]canonjson.Value{}, IdempotencyKey: fmt.Sprintf("rule-%d", i),
			}
			if rule.Image != "" {
				in.Image = rule.Image
			}
			env, err := facet.Create(ctx, in)
			if err != nil {
				t.Fatalf("rule %d: Create: %v", i, err)
			}
			args := rule.Args
			if args == nil {
				args = []string{"any", "argv"}
			}
			proc, err := env.Processes().Spawn(ctx, &contract.ExactProcessLaunch{Executable: rule.Executable, Args: args,
				Cwd: "/", Env: map[string]string{"HOME": "/root"}, Stdin: ptr("in")})
			if err != nil {
				t.Fatalf("rule %d does not answer its own launch: %v", i, err)
			}
			if err := proc.Kill(ctx); err != nil {
				t.Fatal(err)
			}
			term, err := proc.Wait(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := contract.Validate(contract.KindProcessTermination, contract.ProcessTerminationSchema, term); err != nil {
				t.Fatalf("rule %d ended with an invalid termination: %v", i, err)
			}
			st, _ := proc.Status(ctx)
			if _, err := contract.Validate(contract.KindExactProcessStatus, contract.ExactProcessStatusSchema, st); err != nil || !contract.SameProcessTermination(st.Termination, term) {
				t.Fatalf("rule %d: status %+v disagrees with Wait %+v (%v)", i, st, term, err)
			}
			again, err := env.Processes().Get(ctx, proc.PID())
			if err != nil || again == nil {
				t.Fatalf("rule %d: the process is not recovered: %v", i, err)
			}
			for _, pair := range [][2]iter.Seq2[[]byte, error]{{proc.Stdout(ctx), again.Stdout(ctx)}, {proc.Stderr(ctx), again.Stderr(ctx)}} {
				a, b := drain(t, pair[0]), drain(t, pair[1])
				if a != b {
					t.Fatalf("rule %d: a recovered handle replays %q, the first %q", i, b, a)
				}
			}
			env.Destroy(ctx)
		}
	})
}

func drain(t *testing.T, seq iter.Seq2[[]byte, error]) string {
	t.Helper()
	var out []byte
	for chunk, err := range seq {
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, chunk...)
	}
	return string(out)
}
