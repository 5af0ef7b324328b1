-- ListRuns with a Kind filter (delegation and fleet queues, agentrt runs
-- list --kind) reads one kind newest first: this index serves the filter
-- and the order (created_at DESC, id DESC) without a scan or a sort.
CREATE INDEX IF NOT EXISTS runs_by_kind ON runs (kind, created_at DESC, id DESC);
