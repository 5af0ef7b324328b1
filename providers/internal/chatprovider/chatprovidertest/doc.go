// Package chatprovidertest is the truthfulness suite every cli-base chat
// provider built on providers/internal/chatprovider runs against its own
// recorded endpoint: exact usage and the served model read back, another
// served model reported, missing usage left unknown, an in-band error
// failing the turn, a dropped stream never ending as a result, a timeout
// and a cancellation reported as such, and every refusal made before a
// single request. It is imported by tests only.
package chatprovidertest
