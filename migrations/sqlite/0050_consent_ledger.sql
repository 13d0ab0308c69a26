-- Accord, the consent ledger (SQLite): a per-project hash chain over every
-- consent event (see src/consent/ledger.rs).
--
-- * Appended in the same BEGIN IMMEDIATE transaction as the acceptance
--   version or purpose event it records; never updated, except that
--   erasing a subject sets `salt` to NULL (the salt is outside the hashed
--   entry).
-- * `entry` is the canonical JSON text of the entry, hash included, exactly
--   as hashed: it is never re-encoded.
-- * consent_ledger_head keeps the position and hash of each project's last
--   entry, so that removing the newest entries shows.

CREATE TABLE consent_ledger (
    project_id  TEXT    NOT NULL,
    position    INTEGER NOT NULL CHECK (position >= 1),
    record_id   TEXT    NOT NULL,
    entry       TEXT    NOT NULL,
    salt        TEXT,
    CONSTRAINT consent_ledger_pkey PRIMARY KEY (project_id, position)
);

-- Erasure finds a subject's entries by record.
CREATE INDEX consent_ledger_record_idx ON consent_ledger (project_id, record_id);

CREATE TABLE consent_ledger_head (
    project_id  TEXT    NOT NULL PRIMARY KEY,
    position    INTEGER NOT NULL,
    hash        TEXT    NOT NULL
);
