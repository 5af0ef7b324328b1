// Command agentrt is the agentrt command line: validate, identify and run
// agent profiles and contract documents. Run "agentrt --help" for the list
// of commands.
package main

import (
	"context"
	"os"
	"os/signal"

	"github.com/agentrt/agentrt/internal/cli"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	code := cli.Main(ctx, os.Args[1:], cli.IO{In: os.Stdin, Out: os.Stdout, Err: os.Stderr})
	stop()
	os.Exit(code)
}
