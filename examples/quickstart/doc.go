// Command quickstart is seed 003's quickstart in Go: one exact offline run
// with no credentials. A driver plans one task and decides "done"; an
// in-process worker answers with a note; the rounds and the iteration are
// recorded in the embedded SQLite store ($AGENTRT_HOME/agentrt.db), where
// `agentrt runs list` finds them.
//
//	go run ./examples/quickstart
package main
