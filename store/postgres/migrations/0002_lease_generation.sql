-- A run's lease generation (store.Run.Generation): fenced writes name the
-- generation they were granted under and are refused once it changed.
ALTER TABLE runs ADD COLUMN generation bigint NOT NULL DEFAULT 1;
