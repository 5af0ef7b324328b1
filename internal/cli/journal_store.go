package cli

import (
	"time"

	"github.com/spf13/cobra"

	"github.com/agentrt/agentrt/kernel"
	"github.com/agentrt/agentrt/store"
	"github.com/agentrt/agentrt/supervise"
)

// storeJournalFlags are --journal-in-store and --lease, shared by
// agentrt supervise and agentrt graph: the run's spawn journal and
// results kept in the run store (supervise.Options.SpawnStore), fenced
// by a lease, so --resume --run-id continues the run on another machine.
type storeJournalFlags struct {
	inStore bool
	lease   time.Duration
}

func (j *storeJournalFlags) register(cmd *cobra.Command) {
	f := cmd.Flags()
	f.DurationVar(&j.lease, "lease", kernel.DefaultLeaseTTL, "with --journal-in-store: how long the journal stays this process's if it dies or stalls (at least 1s); another process resumes the run once it lapsed")
	f.BoolVar(&j.inStore, "journal-in-store", false, "keep the spawn journal and the results in the run store (--db, or --database shared by many machines) rather than the run dir, so --resume --run-id continues the run on another machine")
}

// check refuses flags that cannot work: a lease under the kernel's
// minimum, or a journal in the store without the --run-id it is found
// by.
func (j storeJournalFlags) check(runID string) error {
	switch {
	case j.lease < kernel.MinLeaseTTL:
		return usage("--lease must be at least %s", kernel.MinLeaseTTL)
	case j.inStore && runID == "":
		return usage("--journal-in-store needs --run-id: the journal is found in the store by the run's id")
	}
	return nil
}

// apply puts the journal in s when the flags ask for it.
func (j storeJournalFlags) apply(o *supervise.Options, s store.Store) {
	if j.inStore {
		o.SpawnStore = s
	}
	o.SpawnLeaseTTL = j.lease
}

// feed is where the command's progress reads the journal: the store's
// run runID, or the run dir's file. holder, the run's observer, tells a
// store's journal which records are this process's.
func (j storeJournalFlags) feed(s store.Store, runID, runDir string, holder *journalHolder) journalFeed {
	if j.inStore {
		return storeJournal(s, runID, holder)
	}
	return fileJournal(runDir)
}
