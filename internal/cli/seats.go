package cli

import (
	"context"
	"fmt"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/contract"
	"github.com/agentrt/agentrt/kernel"
	"github.com/agentrt/agentrt/profile"
	"github.com/agentrt/agentrt/schema"
)

// maxSeatsFileLen bounds the --seats file: it maps a profile's seat
// chain to provider configurations, a few hundred bytes per stage.
const maxSeatsFileLen = 1 << 20

// maxTokenFileLen bounds a remote stage's token file.
const maxTokenFileLen = 16 << 10

// maxSeatStage bounds a stage index in the file.
const maxSeatStage = 1 << 16

// seatsKind names the --seats file in its decoding errors.
const seatsKind = "SeatAccounts"

// seatAccounts is the --seats file: which provider runs each seat stage
// of a profile. A stage is resolved by its index in Stages first, then by
// the account its seat's selector names (kind "seat") in Accounts. The
// file holds no secret: an API key is named by the environment variable
// holding it, a sidecar's token by the file holding it.
type seatAccounts struct {
	Accounts map[string]seatProvider `json:"accounts,omitzero"`
	Stages   map[string]seatProvider `json:"stages,omitzero"`
	// dir is the directory relative paths in the file resolve against.
	dir string
}

// seatProvider is one stage's provider configuration: a provider
// agentrt run --provider knows, and how to reach it.
type seatProvider struct {
	// Provider is the --provider name: scripted, openai, anthropic,
	// claude-code, codex, opencode or remote.
	Provider string `json:"provider"`
	// Script is the scripted provider's script file.
	Script string `json:"script,omitzero"`
	// BaseURL is the model endpoint, or the agentrt serve address of a
	// remote stage.
	BaseURL string `json:"baseUrl,omitzero"`
	// API is the openai provider's wire protocol.
	API string `json:"api,omitzero"`
	// APIKeyEnv names the environment variable holding the model
	// endpoint's key (default: the vendor's variable).
	APIKeyEnv string `json:"apiKeyEnv,omitzero"`
	// TokenFile is the file holding a remote stage's bearer token
	// (default: $AGENTRT_SERVE_TOKEN).
	TokenFile string `json:"tokenFile,omitzero"`
}

var envVarName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]{0,127}$`)

// secretMembers are member names a secret would go in: the file refuses
// them with a pointer to where the secret belongs instead.
var secretMembers = []string{"apiKey", "key", "token", "password", "secret", "authorization", "credential", "credentials"}

var (
	seatPath = schema.String(schema.MinLen(1), schema.MaxLen(4096),
		schema.Matches("must not contain a NUL byte", func(s string) bool { return !strings.ContainsRune(s, 0) }))
	seatURL = schema.String(schema.MinLen(1), schema.MaxLen(2048),
		schema.Matches("must be an absolute http or https URL without user, password or fragment (put a key in the variable apiKeyEnv names, a token in tokenFile)", validSeatURL))
	seatEnv = schema.String(schema.Matches("must be an environment variable name (letters, digits and _, not starting with a digit)", envVarName.MatchString))

	modelStage = func(name string) schema.Node {
		return schema.Object(
			schema.Req("provider", schema.LiteralString(name)),
			schema.Opt("baseUrl", seatURL),
			schema.Opt("apiKeyEnv", seatEnv),
		)
	}
	seatProviderSchema = noSecrets(schema.Discriminated("provider", map[string]schema.Node{
		"scripted": schema.Object(
			schema.Req("provider", schema.LiteralString("scripted")),
			schema.Opt("script", seatPath),
		),
		"openai": schema.Object(
			schema.Req("provider", schema.LiteralString("openai")),
			schema.Opt("baseUrl", seatURL),
			schema.Opt("apiKeyEnv", seatEnv),
			schema.Opt("api", schema.Enum("chat-completions", "responses")),
		),
		"anthropic":   modelStage("anthropic"),
		"claude-code": modelStage("claude-code"),
		"codex":       modelStage("codex"),
		"opencode":    modelStage("opencode"),
		"remote": schema.Object(
			schema.Req("provider", schema.LiteralString("remote")),
			schema.Req("baseUrl", seatURL),
			schema.Opt("tokenFile", seatPath),
		),
	}))
	stageIndex = schema.String(schema.Matches("must be a stage index (0, 1, …)", func(s string) bool {
		n, err := strconv.Atoi(s)
		return err == nil && n >= 0 && n < maxSeatStage && strconv.Itoa(n) == s
	}))
	seatAccountName = schema.String(schema.MinLen(1), schema.MaxLen(256))

	seatAccountsSchema = schema.Object(
		schema.Opt("accounts", schema.Record(seatProviderSchema).Keys(seatAccountName)),
		schema.Opt("stages", schema.Record(seatProviderSchema).Keys(stageIndex)),
	).Refine(func(c *schema.Context, v canonjson.Value) {
		a, _ := v.Get("accounts")
		s, _ := v.Get("stages")
		if len(a.Members()) == 0 && len(s.Members()) == 0 {
			c.Custom("names no provider: map seat accounts under \"accounts\" or stage indexes under \"stages\"")
		}
	})
)

// noSecrets refuses an object member a secret would be written in,
// before n checks the rest, saying where the secret belongs.
func noSecrets(n schema.Node) schema.Node {
	return schema.NodeFunc(func(c *schema.Context, v canonjson.Value) canonjson.Value {
		if v.Kind() == canonjson.Object {
			for _, m := range v.Members() {
				if slices.ContainsFunc(secretMembers, func(s string) bool { return strings.EqualFold(s, m.Name) }) {
					c.Fatal(schema.CodeUnrecognizedKeys, fmt.Sprintf("%q: a secret never goes in this file; name the environment variable holding a key with apiKeyEnv, or a remote sidecar's token file with tokenFile", m.Name), m.Name)
					return v
				}
			}
		}
		return n.Check(c, v)
	})
}

func validSeatURL(s string) bool {
	u, err := url.Parse(s)
	return err == nil && (u.Scheme == "http" || u.Scheme == "https") && u.Host != "" && u.User == nil && u.Fragment == "" && !strings.Contains(s, "#")
}

// parseSeatAccounts decodes a --seats file strictly: unknown members,
// wrong types, bad values and anything a secret would go in are refused
// with a *schema.Error whose issues carry JSON-pointer paths.
func parseSeatAccounts(data []byte) (*seatAccounts, error) {
	if len(data) > maxSeatsFileLen {
		return nil, &schema.Error{Kind: seatsKind, Issues: []schema.Issue{{Code: schema.CodeTooBig,
			Message: fmt.Sprintf("the file is %d bytes, more than the %d a seats file may hold", len(data), maxSeatsFileLen)}}}
	}
	return contract.Parse[seatAccounts](seatsKind, seatAccountsSchema, data)
}

// loadSeatAccounts reads and decodes the --seats file at path (- is
// standard input); relative paths in it resolve against its directory.
func loadSeatAccounts(stdio IO, path string) (*seatAccounts, error) {
	var r io.Reader = stdio.In
	dir := "."
	if path != "-" {
		f, err := os.Open(path)
		if err != nil {
			return nil, usage("--seats: %v", err)
		}
		defer f.Close()
		r, dir = f, filepath.Dir(path)
	}
	data, err := io.ReadAll(io.LimitReader(r, maxSeatsFileLen+1))
	if err != nil {
		return nil, usage("--seats: reading %s: %v", path, err)
	}
	a, err := parseSeatAccounts(data)
	if err != nil {
		return nil, usage("--seats %s: %v", path, err)
	}
	a.dir = dir
	return a, nil
}

// lookup is the configuration of a stage, and where in the file it is
// (a JSON pointer); ok is false when the file names none.
func (a *seatAccounts) lookup(stage int, seat profile.Seat) (cfg seatProvider, where string, ok bool) {
	if c, ok := a.Stages[strconv.Itoa(stage)]; ok {
		return c, "/stages/" + strconv.Itoa(stage), true
	}
	if seat.Selector.Kind == profile.SelectorSeat && seat.Selector.ID != nil {
		if c, ok := a.Accounts[*seat.Selector.ID]; ok {
			return c, string(canonjson.AppendPointerToken([]byte("/accounts"), *seat.Selector.ID)), true
		}
	}
	return seatProvider{}, "", false
}

// seatAccountManager resolves each seat stage to a provider opened from
// the --seats file before the run starts: a stage the file cannot
// resolve, a key variable that is unset or a binary that is missing is
// refused before anything is spent (PRF-07). Stages resolved to the same
// configuration share one provider, so a session one stage left can be continued
// by the next on the same provider. It never sees a credential the
// provider's account owner binds (RG-10).
type seatAccountManager struct {
	providers map[int]contract.Provider
	where     map[int]string
	// progress, when set, is told each stage as the kernel resolves it:
	// every stage from the first one on, before any runs (PRF-07); the
	// summary after the run says which ran and how each ended.
	progress io.Writer
}

// openSeatAccounts opens the provider of every stage of p from stage
// from on.
func openSeatAccounts(a *seatAccounts, p *profile.Profile, from int) (*seatAccountManager, error) {
	m := &seatAccountManager{providers: map[int]contract.Provider{}, where: map[int]string{}}
	opened := map[seatProvider]contract.Provider{}
	for k := from; k < len(p.Seats); k++ {
		seat := p.Seats[k]
		cfg, where, ok := a.lookup(k, seat)
		if !ok {
			account := ""
			if seat.Selector.ID != nil {
				account = fmt.Sprintf(" or its account under \"accounts\": %q", *seat.Selector.ID)
			}
			return nil, usage("--seats: the file names no provider for stage %d (%s on %s); add the stage under \"stages\": \"%d\"%s", k, seat.Model, seat.Provider, k, account)
		}
		if prov, ok := opened[cfg]; ok {
			m.providers[k], m.where[k] = prov, where
			continue
		}
		prov, err := a.open(cfg, where)
		if err != nil {
			return nil, err
		}
		opened[cfg], m.providers[k], m.where[k] = prov, prov, where
	}
	return m, nil
}

// open builds the provider of one entry of the file.
func (a *seatAccounts) open(cfg seatProvider, where string) (contract.Provider, error) {
	spec := providerSpec{Name: cfg.Provider, BaseURL: cfg.BaseURL, OpenAIAPI: cfg.API}
	if cfg.Script != "" {
		spec.ScriptPath = a.resolve(cfg.Script)
	}
	switch cfg.Provider {
	case "remote":
		spec.Token = os.Getenv("AGENTRT_SERVE_TOKEN")
		if cfg.TokenFile != "" {
			tok, err := readTokenFile(a.resolve(cfg.TokenFile))
			if err != nil {
				return nil, usage("--seats %s/tokenFile: %v", where, err)
			}
			spec.Token = tok
		}
	case "scripted":
	default:
		name := cfg.APIKeyEnv
		if name == "" {
			name = vendorKeyVar(cfg.Provider)
		}
		key, ok := os.LookupEnv(name)
		if !ok || key == "" {
			return nil, usage("--seats %s: the environment variable %s holding the stage's key is not set; set it, or name another with apiKeyEnv", where, name)
		}
		spec.APIKey = key
	}
	p, err := buildProvider(spec)
	if err != nil {
		return nil, fmt.Errorf("--seats %s: %w", where, err)
	}
	return p, nil
}

func (a *seatAccounts) resolve(path string) string {
	if filepath.IsAbs(path) {
		return path
	}
	return filepath.Join(a.dir, path)
}

// readTokenFile reads a bearer token: one line, at most maxTokenFileLen
// bytes. Its content never appears in an error.
func readTokenFile(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxTokenFileLen+1))
	if err != nil {
		return "", fmt.Errorf("reading %s: %w", path, err)
	}
	if len(data) > maxTokenFileLen {
		return "", fmt.Errorf("%s is larger than %d bytes; it should hold one token", path, maxTokenFileLen)
	}
	tok := strings.TrimSpace(string(data))
	if tok == "" || strings.ContainsAny(tok, "\r\n") {
		return "", fmt.Errorf("%s must hold exactly one token on one line", path)
	}
	return tok, nil
}

// vendorKeyVar is the environment variable a provider's key is read from
// by default.
func vendorKeyVar(provider string) string {
	switch provider {
	case "anthropic", "claude-code":
		return "ANTHROPIC_API_KEY"
	}
	return "OPENAI_API_KEY"
}

// ProviderFor implements kernel.AccountManager.
func (m *seatAccountManager) ProviderFor(_ context.Context, stage int, seat profile.Seat) (contract.Provider, error) {
	p, ok := m.providers[stage]
	if !ok {
		return nil, fmt.Errorf("the --seats file names no provider for stage %d", stage)
	}
	if m.progress != nil {
		fmt.Fprintf(m.progress, "stage %d resolved: %s on %s (%s, from %s)\n", stage, seat.Model, seat.Provider, p.Name(), m.where[stage])
	}
	return p, nil
}

var _ kernel.AccountManager = (*seatAccountManager)(nil)
