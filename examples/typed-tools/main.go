package main

import (
	"context"
	"fmt"
	"io"
	"os"

	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/contract"
	"github.com/agentrt/agentrt/kernel"
	"github.com/agentrt/agentrt/profile"
	"github.com/agentrt/agentrt/providers/openai"
	"github.com/agentrt/agentrt/store/sqlite"
	"github.com/agentrt/agentrt/tools"
)

// agent is the profile: its prompt, its model, and the tools it may call.
const agent = `{"name":"trip-planner","harness":"cli-base",
	"prompt":{"systemPrompt":"You help plan trips. Use the tools; answer in one sentence."},
	"model":{"provider":"openai","default":"openai/gpt-5.2"},
	"tools":{"weather":true,"convert_currency":true}}`

type weatherIn struct {
	City string `json:"city" jsonschema:"the city, in English"`
}

type weatherOut struct {
	Celsius int    `json:"celsius"`
	Sky     string `json:"sky"`
}

type convertIn struct {
	Amount float64 `json:"amount"`
	From   string  `json:"from" jsonschema:"ISO 4217 code of the amount's currency"`
	To     string  `json:"to" jsonschema:"ISO 4217 code to convert to"`
}

// weather is the current weather of a city (a fixed answer).
func weather(ctx context.Context, in weatherIn) (weatherOut, error) {
	return weatherOut{Celsius: 21, Sky: "sunny"}, nil
}

// convert converts between currencies at fixed rates.
func convert(ctx context.Context, in convertIn) (float64, error) {
	perEUR := map[string]float64{"EUR": 1, "USD": 1.25, "GBP": 0.8}
	from, to := perEUR[in.From], perEUR[in.To]
	if from == 0 || to == 0 {
		return 0, fmt.Errorf("unknown currency pair %s/%s", in.From, in.To)
	}
	return in.Amount / from * to, nil
}

func main() {
	path, err := sqlite.DefaultPath()
	if err == nil {
		opts := openai.Options{BaseURL: os.Getenv("OPENAI_BASE_URL"), APIKey: os.Getenv("OPENAI_API_KEY"), Model: "gpt-5.2"}
		err = plan(context.Background(), os.Stdout, opts, path)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "typed-tools:", err)
		os.Exit(1)
	}
}

// plan runs the profile with the two tools on the endpoint opts name and
// records the run in the SQLite database at dbPath.
func plan(ctx context.Context, w io.Writer, opts openai.Options, dbPath string) error {
	p, err := profile.Parse([]byte(agent))
	if err != nil {
		return err
	}
	weatherTool, err := tools.NewTool("weather", "The current weather in a city.", weather)
	if err != nil {
		return err
	}
	convertTool, err := tools.NewTool("convert_currency", "Convert an amount of money to another currency.", convert)
	if err != nil {
		return err
	}
	// The model is the profile's (the loop fails a turn served by
	// another).
	model, err := openai.New(opts)
	if err != nil {
		return err
	}
	st, err := sqlite.Open(ctx, dbPath, sqlite.Options{})
	if err != nil {
		return err
	}
	defer st.Close()
	res, err := kernel.RunToolLoop(ctx, kernel.ToolLoopOptions{
		Model: model, Profile: p, Store: st,
		User:  "I'm going to Lisbon with 200 USD. What's the weather, and how much is that in euros?",
		Tools: []contract.Tool{weatherTool, convertTool},
	})
	if err != nil {
		return err
	}
	for _, r := range res.ToolResults {
		fmt.Fprintf(w, "%s(%s) → %s\n", r.Call.Name, canonjson.Marshal(r.Call.Args), canonjson.Marshal(r.Outcome.Result))
	}
	fmt.Fprintf(w, "%s\nrun %s: %s after %d model turns\n", res.FinalText, res.RunID, res.StopReason, res.Turns)
	return nil
}
