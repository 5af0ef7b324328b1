// Command stream-a-turn shows kernel.Stream (seed 003's
// runAgentTaskStream): one exact turn as runtime event envelopes, each
// printed the moment it is durable, ending in exactly one terminal
// envelope that states the recorded outcome — then the same envelopes
// replayed from the store.
//
//	go run ./examples/stream-a-turn
package main
