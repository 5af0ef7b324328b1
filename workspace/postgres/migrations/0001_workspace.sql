-- Workspace documents (one row per tenant and path: the live content, or
-- the erased state of a deleted path, whose revision keeps counting) and
-- the erasure audit log. Table names start with workspace_ so they can
-- share a database and schema with the run store. Times are Unix
-- nanoseconds (UTC). Tenants and paths use the "C" collation: they
-- compare and sort byte for byte, as in SQLite and Go.
CREATE TABLE workspace_documents (
    tenant     text    COLLATE "C" NOT NULL,
    path       text    COLLATE "C" NOT NULL,
    revision   bigint  NOT NULL CHECK (revision >= 1),
    live       boolean NOT NULL,
    body       bytea   CHECK (live = (body IS NOT NULL)),
    size       bigint  NOT NULL,
    updated_at bigint  NOT NULL,
    updated_by text    NOT NULL,
    PRIMARY KEY (tenant, path)
);

CREATE TABLE workspace_tombstones (
    tenant     text   COLLATE "C" NOT NULL,
    path       text   COLLATE "C" NOT NULL,
    revision   bigint NOT NULL,
    deleted_at bigint NOT NULL,
    deleted_by text   NOT NULL,
    PRIMARY KEY (tenant, path, revision)
);
