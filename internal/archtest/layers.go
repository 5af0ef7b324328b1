package archtest

import "strings"

// Module is the agentrt module path.
const Module = "github.com/agentrt/agentrt"

// layers maps a package directory (relative to the module root) or a
// directory prefix ending in "/" to its layer. The longest match wins.
var layers = map[string]int{
	"canonjson":          0,
	"schema":             0,
	"internal/whatwgurl": 0,
	// boundediter imports only the standard library.
	"internal/boundediter": 0,
	"internal/termsafe":    0,
	// ctxsleep imports only the standard library.
	"internal/ctxsleep": 0,
	// regularfile imports only the standard library.
	"internal/regularfile": 0,
	// flock imports only the standard library.
	"internal/flock": 0,
	// procguard imports only the standard library.
	"internal/procguard": 0,

	"harness":    1,
	"profile":    1,
	"profile/":   1,
	"contract":   1,
	"contract/":  1,
	"candidate":  1,
	"candidate/": 1,

	"providers/": 2,
	"tools":      2,

	"store":             3,
	"store/":            3,
	"internal/sqlitedb": 3,
	"internal/pgdb":     3,
	"workspace":         3,
	"workspace/":        3,

	"ledger":     4,
	"kernel":     4,
	"kernel/":    4,
	"taskqueue":  4,
	"supervise":  4,
	"graph":      4,
	"retained":   4,
	"improve":    4,
	"improve/":   4,
	"journal":    4,
	"journal/":   4,
	"chatturn":   4,
	"taskstream": 4,
	"fleet":      4,
	"delegation": 4,

	"sidecar":           5,
	"mcpserver":         5,
	"coordmcp":          5,
	"telemetry":         5,
	"telemetry/":        5,
	"conformance":       5,
	"cmd/":              5,
	"internal/cli":      5,
	"internal/checkreg": 5,

	// The instrument definitions import the metric API only, below the
	// fleet (layer 4) that records them too.
	"telemetry/instruments": 2,

	"examples/": 6,
}

// detached are imports production code must not make whatever the
// layers allow. Search and activation stay detached (spec runtime §3.9,
// RTP-04, RTP-13): improve/search finds and measures candidates and
// activates nothing, package improve is the only write path and never
// searches; neither imports the other (tests may, to show the handoff).
var detached = map[string][]string{
	"improve/search": {"improve"},
	"improve":        {"improve/search"},
}

// testOnly packages may be imported only from _test.go files.
var testOnly = map[string]bool{"internal/vectors": true, "internal/scaletest": true, "internal/pgtest": true, "internal/clitest": true, "internal/gittest": true, "internal/receipttest": true, "internal/transcript": true, "internal/consumertest": true, "internal/sqlitetest": true, "internal/storefault": true, "internal/servetest": true, "internal/storetest": true, "internal/journaltest": true}

// unlayered packages are tooling, exempt from the layer table.
var unlayered = map[string]bool{"internal/archtest": true, "internal/vectors": true, "internal/scaletest": true, "internal/pgtest": true, "internal/clitest": true, "internal/gittest": true, "internal/receipttest": true, "internal/transcript": true, "internal/consumertest": true, "internal/sqlitetest": true, "internal/storefault": true, "internal/servetest": true, "internal/storetest": true, "internal/journaltest": true}

// contractDeps are the only non-standard imports allowed in layers 0 and
// 1 (docs/DESIGN.md: the contract depends on the standard library and canonjson).
// The Go team's x/net/idna mapping table and x/text's normalization and
// bidi classes serve WHATWG host parsing (the reference's new URL), which
// decides whether an MCP URL or a public config value carries credentials.
var contractDeps = []string{"golang.org/x/net/idna", "golang.org/x/text/unicode/norm", "golang.org/x/text/unicode/bidi"}

// layerOf returns the layer of a module-relative package directory.
func layerOf(dir string) (int, bool) {
	best, layer := -1, 0
	for key, l := range layers {
		match := key == dir || strings.HasSuffix(key, "/") && strings.HasPrefix(dir, key)
		if match && len(key) > best {
			best, layer = len(key), l
		}
	}
	return layer, best >= 0
}
