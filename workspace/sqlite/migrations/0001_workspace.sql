-- Workspace documents (one row per tenant and path: the live content, or
-- the erased state of a deleted path, whose revision keeps counting) and
-- the erasure audit log. Table names start with workspace_ so the tables
-- can share a database file with the run store. Times are Unix
-- nanoseconds (UTC); paths compare byte for byte (BINARY collation).
CREATE TABLE workspace_documents (
    tenant     TEXT    NOT NULL,
    path       TEXT    NOT NULL,
    revision   INTEGER NOT NULL CHECK (revision >= 1),
    live       INTEGER NOT NULL CHECK (live IN (0, 1)),
    body       BLOB    CHECK ((live = 1) = (body IS NOT NULL)),
    size       INTEGER NOT NULL,
    updated_at INTEGER NOT NULL,
    updated_by TEXT    NOT NULL,
    PRIMARY KEY (tenant, path)
) STRICT;

CREATE TABLE workspace_tombstones (
    tenant     TEXT    NOT NULL,
    path       TEXT    NOT NULL,
    revision   INTEGER NOT NULL,
    deleted_at INTEGER NOT NULL,
    deleted_by TEXT    NOT NULL,
    PRIMARY KEY (tenant, path, revision)
) STRICT, WITHOUT ROWID;
