package supervise

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/contract"
	"github.com/agentrt/agentrt/tools"
	"github.com/google/jsonschema-go/jsonschema"
)

// echoVerb is verb name over In with a function that returns the
// decoded arguments themselves: the tool's result is its arguments as
// the verb read them, re-encoded.
func echoVerb[In any](t testing.TB, name string, opts ...tools.ToolOption) contract.Tool {
	t.Helper()
	tl, err := verb(name, "", func(_ context.Context, in In) (In, error) { return in, nil }, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return tl
}

// argumentDecoders are the coordination verbs' argument decoders, as
// the verbs declare them (Coordinator.Tools): the schema check and the
// strict decoding into each verb's arguments type.
func argumentDecoders(t testing.TB) []contract.Tool {
	ss, err := (*Coordinator)(nil).spawnSchema()
	if err != nil {
		t.Fatal(err)
	}
	return []contract.Tool{
		echoVerb[SpawnArgs](t, VerbSpawnWorker, tools.WithInputSchema(ss)),
		echoVerb[AwaitArgs](t, VerbAwaitEvent),
		echoVerb[ObserveArgs](t, VerbObserveAgent),
		echoVerb[SteerArgs](t, VerbSteerAgent),
		echoVerb[SubmitArgs](t, VerbSubmitResult),
		echoVerb[StopArgs](t, VerbStop),
		echoVerb[JournalArgs](t, VerbReadJournal),
		echoVerb[AskArgs](t, VerbAskParent, tools.WithInference(&jsonschema.ForOptions{TypeSchemas: map[reflect.Type]*jsonschema.Schema{
			reflect.TypeFor[QuestionOption](): questionOptionSchema()}})),
		echoVerb[ListQuestionsArgs](t, VerbListQuestions),
		echoVerb[AnswerArgs](t, VerbAnswerQuestion),
		echoVerb[RunAnalystArgs](t, VerbRunAnalyst),
		echoVerb[Lens](t, VerbDefineAnalyst),
	}
}

// pointsInto reports whether pointer, or the member that holds it (a
// required member's refusal names the member that is absent), is in
// doc.
func pointsInto(doc canonjson.Value, pointer string) bool {
	if _, ok := canonjson.Resolve(doc, pointer); ok {
		return true
	}
	i := strings.LastIndexByte(pointer, '/')
	if i < 0 {
		return false
	}
	_, ok := canonjson.Resolve(doc, pointer[:i])
	return ok
}

// FuzzVerbArguments: whatever arguments a manager's model sends a
// coordination verb (ask_parent's options among them), the verb's
// decoder never panics; it refuses with a *tools.ArgumentsError whose
// pointer is in the arguments (or is the absent member of an object in
// them), or it reads a value that, re-encoded, reads back the same.
func FuzzVerbArguments(f *testing.F) {
	for _, s := range []string{
		`{"level":"worker","question":"q","reason":"r","urgency":"blocks-step","options":["a",{"label":"b","tradeoff":"slow"}]}`,
		`{"level":"worker","question":"q","reason":"r","urgency":"blocks-step","options":[{"label":""}]}`,
		`{"level":"worker","question":"q","reason":"r","urgency":"blocks-step","options":[{"label":"a","extra":1}]}`,
		`{"level":"loop","question":"q","reason":"r","urgency":"continue-without","options":[7,null,[]]}`,
		`{"profile":"writer","task":"x","budget":{"maxTokens":5}}`, `{"profile":{"name":"c"},"task":"x"}`,
		`{"workerId":"run1:s1","instruction":"go","interrupt":true}`, `{"kinds":["settled","finding"],"timeoutMs":-1}`,
		`{"workerId":"w","outputPath":"/text","offset":3,"limit":9}`, `{"sinceRow":1,"kinds":["spawned"],"limit":2,"maxBytes":10}`,
		`{"questionId":"q1","answer":"yes"}`, `{"questionId":"q1","escalateTo":"user","escalateReason":"x"}`,
		`{"kind":"failure-triage","workerId":"run1:s1"}`, `{"reason":"done"}`, `{"result":"r"}`, `{"cursor":"q3","limit":100}`,
		`{"id":"ab","description":"d","area":"a","question":"q","instructions":"i","toolGroup":"all","limits":{"maxLlmCalls":99}}`,
		`{}`, `[]`, `"x"`, `{"a":{"b":{"c":[[[]]]}}}`,
	} {
		f.Add([]byte(s))
	}
	ts := argumentDecoders(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		args, err := canonjson.Decode(data)
		if err != nil {
			return
		}
		ctx := context.Background()
		for _, tl := range ts {
			out, err := tl.Run(ctx, args)
			if err != nil {
				var ae *tools.ArgumentsError
				if !errors.As(err, &ae) {
					t.Fatalf("%s: refusal %T %v is not a *tools.ArgumentsError", tl.Name, err, err)
				}
				if !pointsInto(args, ae.Path) {
					t.Fatalf("%s: refusal at %q, not in the arguments %s", tl.Name, ae.Path, canonjson.Marshal(args))
				}
				continue
			}
			again, err := tl.Run(ctx, out)
			if err != nil {
				t.Fatalf("%s: %s was read, but its re-encoding %s is refused: %v", tl.Name, canonjson.Marshal(args), canonjson.Marshal(out), err)
			}
			if !canonjson.Equal(out, again) {
				t.Fatalf("%s: %s reads back as %s", tl.Name, canonjson.Marshal(out), canonjson.Marshal(again))
			}
		}
	})
}
