-- ListIdempotency by age (the server's record retention sweeps the
-- oldest records of one scope): this index serves the filter and the
-- order (created_at, key) without a scan or a sort.
CREATE INDEX IF NOT EXISTS idempotency_by_age ON idempotency (scope, created_at, key);
