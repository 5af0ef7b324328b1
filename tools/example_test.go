package tools_test

import (
	"context"
	"fmt"

	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/contract"
	"github.com/agentrt/agentrt/tools"
)

// A Go function becomes a tool: the schema the model sees is inferred from
// the input type, and arguments that do not match it never reach the
// function.
func ExampleNewTool() {
	type forecastIn struct {
		City string `json:"city" jsonschema:"the city to forecast"`
		Days int    `json:"days,omitempty" jsonschema:"how many days ahead (default 1)"`
	}
	type forecastOut struct {
		City string `json:"city"`
		Sky  string `json:"sky"`
	}
	forecast, err := tools.NewTool("forecast", "The weather forecast for a city.",
		func(ctx context.Context, in forecastIn) (forecastOut, error) {
			return forecastOut{City: in.City, Sky: "clear"}, nil
		})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("schema:", string(canonjson.Marshal(forecast.InputSchema)))

	for _, args := range []string{`{"city":"Lisbon"}`, `{"city":"Lisbon","days":"two"}`, `{"days":2}`} {
		v, _ := canonjson.Decode([]byte(args))
		res, err := forecast.Run(context.Background(), v)
		if err != nil {
			fmt.Println("refused:", err)
			continue
		}
		fmt.Println("result:", string(canonjson.Marshal(res)))
	}
	// Output:
	// schema: {"type":"object","properties":{"city":{"type":"string","description":"the city to forecast"},"days":{"type":"integer","description":"how many days ahead (default 1)"}},"required":["city"],"additionalProperties":false}
	// result: {"city":"Lisbon","sky":"clear"}
	// refused: the arguments at /days do not match the input schema: type: two has type "string", want "integer"
	// refused: the arguments do not match the input schema: required: missing properties: ["city"]
}

// A hand-written tool's schema is checked the same way: compile it once,
// then check each call.
func ExampleValidator() {
	schema, _ := canonjson.Decode([]byte(`{"type":"object","properties":{"sku":{"type":"string"}},"required":["sku"]}`))
	v, err := tools.NewValidator(contract.Tool{Name: "stock", InputSchema: schema})
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, args := range []string{`{"sku":"A-1"}`, `{"sku":7}`, `"A-1"`} {
		a, _ := canonjson.Decode([]byte(args))
		fmt.Printf("%s: %v\n", args, v.Check(a))
	}
	// Output:
	// {"sku":"A-1"}: <nil>
	// {"sku":7}: the arguments at /sku do not match the input schema: type: 7 has type "integer", want "string"
	// "A-1": the arguments are a JSON string, not a JSON object
}
