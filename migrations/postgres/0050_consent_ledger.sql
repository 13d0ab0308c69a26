-- Accord, the consent ledger (PostgreSQL): a per-project hash chain over
-- every consent event (see src/consent/ledger.rs).
--
-- * Appended in the same transaction as the acceptance version or purpose
--   event it records, after locking the project's row of
--   consent_ledger_head (SELECT … FOR UPDATE): appends to one project's
--   ledger are serialized, so positions are gapless and each entry names
--   the hash of the one before. Never updated, except that erasing a
--   subject sets `salt` to NULL (the salt is outside the hashed entry).
-- * `entry` is the canonical JSON text of the entry, hash included, exactly
--   as hashed (text, not jsonb: jsonb would re-encode it).
-- * consent_ledger_head keeps the position and hash of each project's last
--   entry, so that removing the newest entries shows.

CREATE TABLE consent_ledger (
    project_id  text   NOT NULL,
    position    bigint NOT NULL CHECK (position >= 1),
    record_id   text   NOT NULL,
    entry       text   NOT NULL,
    salt        text,
    CONSTRAINT consent_ledger_pkey PRIMARY KEY (project_id, position)
);

-- Erasure finds a subject's entries by record.
CREATE INDEX consent_ledger_record_idx ON consent_ledger (project_id, record_id);

CREATE TABLE consent_ledger_head (
    project_id  text   NOT NULL PRIMARY KEY,
    position    bigint NOT NULL,
    hash        text   NOT NULL
);
