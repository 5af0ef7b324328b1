// Package chatprovidertest is the truthfulness suite every cli-base chat
// provider built on providers/chatprovider runs against its own
// recorded endpoint: exact usage and the served model read back, another
// served model reported, missing usage left unknown, an in-band error
// failing the turn, a dropped stream never ending as a result, a timeout
// and a cancellation reported as such, and every refusal made before a
// single request. It is imported by tests only.
//
// It is public, as chatprovider is, because a provider written outside
// this module on chatprovider owes the same truths as openai and
// anthropic, and the suite needs nothing but an Endpoint: a function
// that starts the author's own recorded server and returns the provider
// over it. contract/providertest checks what every provider owes; this
// suite adds what a model API's streams can get wrong.
package chatprovidertest
