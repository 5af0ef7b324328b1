package search

import (
	"errors"
	"fmt"

	"github.com/agentrt/agentrt/contract"
	"github.com/agentrt/agentrt/schema"
)

// ScenariosKind names the scenarios file in errors.
const ScenariosKind = "ImproveScenarios"

// MaxScenariosFileBytes bounds a scenarios file.
const MaxScenariosFileBytes = 16 << 20

// scenariosSchema is the scenarios file:
//
//	{"cases": [{"id": "c1", "input": "…", "expected": "…", "partition": "train"}, …]}
//
// expected is optional (a Command judge may not need one); partition is
// train, selection or test.
var scenariosSchema = schema.Object(
	schema.Req("cases", schema.Array(schema.Object(
		schema.Req("id", schema.String(schema.MinLen(1), schema.MaxLen(200))),
		schema.Req("input", schema.String(schema.MaxLen(MaxScenarioBytes))),
		schema.Opt("expected", schema.String(schema.MaxLen(MaxScenarioBytes))),
		schema.Req("partition", schema.Enum(string(Train), string(Selection), string(Test))),
	)).MinItems(1).MaxItems(MaxScenarios)),
)

// ParseScenarios decodes a scenarios file strictly (unknown members,
// duplicate names, wrong types refused) and checks the set as Improve
// does: unique ids, and at least one search and one test case. A refusal
// is a *schema.Error whose issues carry JSON pointers.
func ParseScenarios(data []byte) ([]Scenario, error) {
	if len(data) > MaxScenariosFileBytes {
		return nil, &schema.Error{Kind: ScenariosKind, Issues: []schema.Issue{{Path: "", Code: schema.CodeTooBig,
			Message: fmt.Sprintf("the file is %d bytes; at most %d", len(data), MaxScenariosFileBytes)}}}
	}
	f, err := contract.Parse[struct {
		Cases []Scenario `json:"cases"`
	}](ScenariosKind, scenariosSchema, data)
	if err != nil {
		return nil, err
	}
	if err := checkScenarios(f.Cases, "/cases"); err != nil {
		var oe *OptionsError
		if errors.As(err, &oe) {
			return nil, &schema.Error{Kind: ScenariosKind, Issues: []schema.Issue{{Path: oe.Path, Code: schema.CodeCustom, Message: oe.Reason}}}
		}
		return nil, err
	}
	return f.Cases, nil
}
