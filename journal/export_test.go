package journal

// Commits reports how many fsyncs have committed batches.
func (j *Journal) Commits() int64 {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.commits
}

// Queued reports how many batches wait for a commit.
func (j *Journal) Queued() int {
	j.mu.Lock()
	defer j.mu.Unlock()
	return len(j.queue)
}

// HoldCommits takes the commit token, as a commit in progress would,
// until release is called.
func (j *Journal) HoldCommits() (release func()) {
	j.token <- struct{}{}
	return func() { <-j.token }
}

// BreakFile closes the file under the journal, so the next write fails.
func (j *Journal) BreakFile() { j.f.Close() }

// Closing reports whether Close has begun.
func (j *Journal) Closing() bool {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.closed
}
