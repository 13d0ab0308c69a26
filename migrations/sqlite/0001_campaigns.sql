-- Accord, campaign half (SQLite).
--
-- Representation choices:
-- * Timestamps are INTEGER microseconds since the Unix epoch, UTC: exact to
--   the microsecond every Accord timestamp carries, and they sort as numbers.
--   To read one: strftime('%Y-%m-%dT%H:%M:%fZ', created_date / 1e6, 'unixepoch').
-- * UUIDs are TEXT, lowercase and hyphenated; that text sorts like the bytes.
-- * Decimals (quota usage, amounts, limits) are TEXT in canonical decimal
--   form. SQLite has no decimal type and REAL would round. No statement ever
--   compares or adds them in SQL: the quota guard reads, checks and writes
--   them in Rust inside a BEGIN IMMEDIATE transaction, which already holds
--   the database's only write lock.
-- * Rules and quotas are JSON documents (only ever read whole); every field
--   that a query filters or sorts on is a real column.

CREATE TABLE campaign (
    project_id          TEXT    NOT NULL,
    id                  TEXT    NOT NULL,
    ref_code            TEXT    NOT NULL,
    name                TEXT    NOT NULL,
    description         TEXT,
    image_url           TEXT,
    start_date          INTEGER NOT NULL,
    end_date            INTEGER NOT NULL,
    status              TEXT    NOT NULL,
    priority            INTEGER NOT NULL,
    channel             TEXT,
    group_name          TEXT,
    quotas              TEXT    NOT NULL CHECK (json_valid(quotas)),
    rules               TEXT    NOT NULL CHECK (json_valid(rules)),
    version             INTEGER NOT NULL,
    created_by          TEXT    NOT NULL,
    last_modified_by    TEXT    NOT NULL,
    created_date        INTEGER NOT NULL,
    last_modified_date  INTEGER NOT NULL,
    -- Lowercased copies for the list's case-insensitive `q` filter, folded by
    -- Rust (Unicode) because SQLite's lower() folds ASCII only.
    search_name         TEXT    NOT NULL,
    search_ref_code     TEXT    NOT NULL,
    search_group_name   TEXT,
    CONSTRAINT campaign_pkey PRIMARY KEY (project_id, id),
    -- Also serves lookups by code, all_campaigns (ordered by ref_code) and
    -- the list's default order.
    CONSTRAINT campaign_ref_code_key UNIQUE (project_id, ref_code)
);

-- The list filtered by status, in its default order.
CREATE INDEX campaign_status_idx ON campaign (project_id, status, ref_code);
-- Other sort keys and `q` scan one project's rows (reached through the
-- primary key's project_id prefix): a project has hundreds of campaigns, not
-- millions, and a substring match cannot use a B-tree anyway.

-- Bumped in the same transaction as every campaign insert, update and
-- delete, so that other processes notice catalog changes with one read.
CREATE TABLE campaign_catalog (
    project_id TEXT    NOT NULL PRIMARY KEY,
    version    INTEGER NOT NULL
);

CREATE TABLE quota_usage (
    project_id TEXT NOT NULL,
    quota_key  TEXT NOT NULL,
    used       TEXT NOT NULL,
    CONSTRAINT quota_usage_pkey PRIMARY KEY (project_id, quota_key)
);

-- No foreign key to campaign: deleting a campaign keeps its redemptions,
-- they are the record of what was given.
CREATE TABLE redemption (
    project_id       TEXT    NOT NULL,
    id               TEXT    NOT NULL,
    campaign_id      TEXT    NOT NULL,
    campaign_code    TEXT    NOT NULL,
    campaign_version INTEGER NOT NULL,
    status           TEXT    NOT NULL,
    user_id          TEXT,
    channel          TEXT,
    idempotency_key  TEXT,
    action_txs       TEXT    NOT NULL CHECK (json_valid(action_txs)),
    created_date     INTEGER NOT NULL,
    cancelled_date   INTEGER,
    CONSTRAINT redemption_pkey PRIMARY KEY (project_id, id)
);

-- One redemption per idempotency key: the replay lookup, and the guard
-- that two concurrent redeems with one key cannot both record.
CREATE UNIQUE INDEX redemption_idempotency_key ON redemption (project_id, idempotency_key)
    WHERE idempotency_key IS NOT NULL;
-- list_redemptions, newest first: unfiltered, by campaign code, by user.
CREATE INDEX redemption_created_idx ON redemption (project_id, created_date DESC, id DESC);
CREATE INDEX redemption_campaign_code_idx
    ON redemption (project_id, campaign_code, created_date DESC, id DESC);
CREATE INDEX redemption_user_idx ON redemption (project_id, user_id, created_date DESC, id DESC);
-- campaign_quota_usage.
CREATE INDEX redemption_campaign_id_idx ON redemption (project_id, campaign_id);

-- What a redemption charged, in plan order (sorted by key), so that cancel
-- gives exactly that back and usage can be listed per campaign.
CREATE TABLE redemption_charge (
    project_id    TEXT    NOT NULL,
    redemption_id TEXT    NOT NULL,
    position      INTEGER NOT NULL,
    quota_key     TEXT    NOT NULL,
    amount        TEXT    NOT NULL,
    quota_limit   TEXT    NOT NULL,
    CONSTRAINT redemption_charge_pkey PRIMARY KEY (project_id, redemption_id, position),
    CONSTRAINT redemption_charge_redemption_fkey FOREIGN KEY (project_id, redemption_id)
        REFERENCES redemption (project_id, id) ON DELETE CASCADE
);
