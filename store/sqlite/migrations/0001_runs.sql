-- Runs, their append-only events and cost-ledger entries, and idempotency
-- records. Times are Unix nanoseconds (UTC); documents are canonical JSON.
CREATE TABLE runs (
    id          TEXT    PRIMARY KEY,
    kind        TEXT    NOT NULL,
    status      TEXT    NOT NULL,
    created_at  INTEGER NOT NULL,
    updated_at  INTEGER NOT NULL,
    revision    INTEGER NOT NULL,
    owner       TEXT    NOT NULL DEFAULT '',
    lease_until INTEGER NOT NULL DEFAULT 0,
    doc         TEXT
) STRICT;

CREATE INDEX runs_by_created ON runs (created_at DESC, id DESC);

CREATE TABLE events (
    run_id TEXT    NOT NULL REFERENCES runs (id),
    seq    INTEGER NOT NULL,
    id     TEXT    NOT NULL,
    type   TEXT    NOT NULL,
    time   INTEGER NOT NULL,
    body   TEXT    NOT NULL,
    PRIMARY KEY (run_id, seq),
    UNIQUE (run_id, id)
) STRICT, WITHOUT ROWID;

CREATE TABLE ledger (
    run_id TEXT    NOT NULL REFERENCES runs (id),
    seq    INTEGER NOT NULL,
    time   INTEGER NOT NULL,
    body   TEXT    NOT NULL,
    PRIMARY KEY (run_id, seq)
) STRICT, WITHOUT ROWID;

CREATE TABLE idempotency (
    scope          TEXT    NOT NULL,
    key            TEXT    NOT NULL,
    request_digest TEXT    NOT NULL,
    result         TEXT,
    created_at     INTEGER NOT NULL,
    PRIMARY KEY (scope, key)
) STRICT, WITHOUT ROWID;
