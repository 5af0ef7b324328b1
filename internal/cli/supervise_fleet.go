package cli

import (
	"context"

	"github.com/spf13/cobra"

	"github.com/agentrt/agentrt/fleet"
	"github.com/agentrt/agentrt/supervise"
)

// superviseFleetFlags is --fleet QUEUE of agentrt supervise: its
// workers run as fleet runs on the run store's PostgreSQL database,
// executed by agentrt worker processes on any machine.
type superviseFleetFlags struct {
	queue, riverSchema string
}

func (f *superviseFleetFlags) register(cmd *cobra.Command) {
	cmd.Flags().StringVar(&f.queue, "fleet", "", "run the workers as fleet runs on this queue (a provider name agentrt worker processes serve) of the --database's fleet, instead of in this process")
	cmd.Flags().StringVar(&f.riverSchema, "river-schema", fleet.DefaultRiverSchema, "with --fleet: schema of River's job tables")
}

// check refuses, before anything is opened, what --fleet leaves to
// the worker processes, and --fleet without a database.
func (f *superviseFleetFlags) check(cmd *cobra.Command, sf storeFlags) error {
	if f.queue == "" {
		if cmd.Flags().Changed("river-schema") {
			return usage("--river-schema applies to --fleet only")
		}
		return nil
	}
	for _, name := range []string{"worker-provider", "worker-base-url", "worker-openai-api", "seats", "script"} {
		if cmd.Flags().Changed(name) {
			return usage("--%s does not apply to --fleet: the agentrt worker process that takes a worker decides how it runs (agentrt worker --help)", name)
		}
	}
	if sf.url() == "" {
		return usage("--fleet needs the fleet's PostgreSQL database: --database URL or $AGENTRT_DATABASE_URL")
	}
	return nil
}

// executor opens the fleet of the run store's database and returns the
// executor that submits each worker to it, and what closes the fleet;
// nil when --fleet is not given.
func (f *superviseFleetFlags) executor(ctx context.Context, sf storeFlags) (supervise.Executor, func(), error) {
	if f.queue == "" {
		return nil, func() {}, nil
	}
	ff := fleetFlags{database: sf.url(), riverSchema: f.riverSchema, storeSchema: sf.schema}
	fl, err := ff.open(ctx, nil)
	if err != nil {
		return nil, nil, err
	}
	return &fleet.Executor{Fleet: fl, Provider: f.queue}, func() { fl.Close() }, nil
}
