package cli

import (
	"context"

	"github.com/agentrt/agentrt/contract"
)

// MainWith is Main with the run commands' and agentrt serve's providers
// opened by open, so a test can share one provider between invocations,
// as a provider outside the process is shared, or watch what a served
// provider does.
func MainWith(ctx context.Context, args []string, stdio IO, open func(name, scriptPath, baseURL, openaiAPI string) (contract.Provider, error)) int {
	return mainWith(ctx, args, stdio, open)
}

// CommandDeliverable is the check of agentrt mcp delegate --check-cmd.
var CommandDeliverable = commandDeliverable

// OpenProvider is the provider opener Main uses.
var OpenProvider = openProvider

// MaxInputLen bounds every file the CLI reads whole.
const MaxInputLen = maxInputLen

// CredentialKeySuffix ends the name of a SQLite store's credential key
// file, beside its database.
const CredentialKeySuffix = credentialKeySuffix

// StoreCredentialKey is the key in a SQLite store's key file at path,
// created when there is none.
var StoreCredentialKey = storeCredentialKey
