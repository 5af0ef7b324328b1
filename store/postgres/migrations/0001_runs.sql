-- Runs, their append-only events and cost-ledger entries, and idempotency
-- records: the same shape as store/sqlite. Times are Unix nanoseconds
-- (UTC); documents are canonical JSON kept as text (never jsonb, which
-- would rewrite them). Keys use the "C" collation so they order byte for
-- byte, as in SQLite and Go.
CREATE TABLE runs (
    id          text   COLLATE "C" PRIMARY KEY,
    kind        text   NOT NULL,
    status      text   NOT NULL,
    created_at  bigint NOT NULL,
    updated_at  bigint NOT NULL,
    revision    bigint NOT NULL,
    owner       text   NOT NULL DEFAULT '',
    lease_until bigint NOT NULL DEFAULT 0,
    doc         text
);

CREATE INDEX runs_by_created ON runs (created_at DESC, id DESC);
CREATE INDEX runs_by_status ON runs (status);

CREATE TABLE events (
    run_id text   COLLATE "C" NOT NULL REFERENCES runs (id),
    seq    bigint NOT NULL,
    id     text   COLLATE "C" NOT NULL,
    type   text   NOT NULL,
    time   bigint NOT NULL,
    body   text   NOT NULL,
    PRIMARY KEY (run_id, seq),
    UNIQUE (run_id, id)
);

CREATE TABLE ledger (
    run_id text   COLLATE "C" NOT NULL REFERENCES runs (id),
    seq    bigint NOT NULL,
    time   bigint NOT NULL,
    body   text   NOT NULL,
    PRIMARY KEY (run_id, seq)
);

CREATE TABLE idempotency (
    scope          text   COLLATE "C" NOT NULL,
    key            text   COLLATE "C" NOT NULL,
    request_digest text   NOT NULL,
    result         text,
    created_at     bigint NOT NULL,
    PRIMARY KEY (scope, key)
);
