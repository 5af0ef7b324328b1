// Command agentrt is the agentrt command line: validate, identify and run
// agent profiles and contract documents. Run "agentrt --help" for the list
// of commands.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/agentrt/agentrt/internal/cli"
)

func main() {
	// The first SIGINT or SIGTERM ends the context, so a command winds
	// down and reports what happened (a supervised run prints its
	// interrupted result and can be resumed); a second one, the handler
	// gone, stops the process at once.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	go func() { <-ctx.Done(); stop() }()
	code := cli.Main(ctx, os.Args[1:], cli.IO{In: os.Stdin, Out: os.Stdout, Err: os.Stderr})
	stop()
	os.Exit(code)
}
