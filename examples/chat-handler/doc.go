// Command chat-handler serves chat turns over HTTP with chatturn.Handler
// (seed 003's handleChatTurn): each POST streams one turn as NDJSON (or
// server-sent events with Accept: text/event-stream), the turn's model
// work is an exact run of a scripted provider, and the assistant's text
// is persisted once the turn ends. Turns are recorded in SQLite, so a
// client that loses its connection comes back with the X-Execution-ID
// and Last-Event-ID it had and gets the rest of the same turn.
//
//	go run ./examples/chat-handler &
//	curl -sN -X POST 'localhost:8080/?session=demo&turn=0'
//	curl -sN -X POST -H 'Last-Event-ID: 2' 'localhost:8080/?session=demo&turn=0'
package main
