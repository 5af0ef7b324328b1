// Command tool-loop shows kernel.RunToolLoop (seed 003's runToolLoop): a
// model that calls a tool twice and then answers, offline, with the run
// recorded in the embedded SQLite store where `agentrt runs show` finds it.
//
//	go run ./examples/tool-loop
package main
