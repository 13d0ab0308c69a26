-- Accord, campaign half (PostgreSQL).
--
-- * Timestamps are timestamptz (microsecond precision, like every Accord
--   timestamp); decimals are numeric, compared and added by the database in
--   the quota guard; ids are uuid.
-- * Text that the store sorts or compares for order is COLLATE "C": bytewise,
--   the same order as Rust's str and SQLite's BINARY collation, whatever the
--   database's locale.
-- * Rules and quotas are jsonb documents (only ever read whole); every field
--   that a query filters or sorts on is a real column.

CREATE TABLE campaign (
    project_id          text        NOT NULL,
    id                  uuid        NOT NULL,
    ref_code            text        COLLATE "C" NOT NULL,
    name                text        COLLATE "C" NOT NULL,
    description         text,
    image_url           text,
    start_date          timestamptz NOT NULL,
    end_date            timestamptz NOT NULL,
    status              text        NOT NULL,
    priority            integer     NOT NULL,
    channel             text,
    group_name          text,
    quotas              jsonb       NOT NULL,
    rules               jsonb       NOT NULL,
    version             bigint      NOT NULL,
    created_by          text        NOT NULL,
    last_modified_by    text        NOT NULL,
    created_date        timestamptz NOT NULL,
    last_modified_date  timestamptz NOT NULL,
    -- Lowercased copies for the list's case-insensitive `q` filter, folded by
    -- Rust so that every store folds case the same way.
    search_name         text        NOT NULL,
    search_ref_code     text        NOT NULL,
    search_group_name   text,
    CONSTRAINT campaign_pkey PRIMARY KEY (project_id, id),
    -- Also serves lookups by code, all_campaigns (ordered by ref_code) and
    -- the list's default order.
    CONSTRAINT campaign_ref_code_key UNIQUE (project_id, ref_code)
);

-- The list filtered by status, in its default order.
CREATE INDEX campaign_status_idx ON campaign (project_id, status, ref_code);
-- Other sort keys and `q` scan one project's rows (reached through the
-- primary key's project_id prefix): a project has hundreds of campaigns, not
-- millions, and a substring match cannot use a B-tree anyway (pg_trgm would
-- need an extension, which a managed database may not allow).

-- Bumped in the same transaction as every campaign insert, update and
-- delete, so that other processes notice catalog changes with one read.
CREATE TABLE campaign_catalog (
    project_id text   NOT NULL PRIMARY KEY,
    version    bigint NOT NULL
);

CREATE TABLE quota_usage (
    project_id text    NOT NULL,
    quota_key  text    COLLATE "C" NOT NULL,
    used       numeric NOT NULL,
    CONSTRAINT quota_usage_pkey PRIMARY KEY (project_id, quota_key)
);

-- No foreign key to campaign: deleting a campaign keeps its redemptions,
-- they are the record of what was given.
CREATE TABLE redemption (
    project_id       text        NOT NULL,
    id               uuid        NOT NULL,
    campaign_id      uuid        NOT NULL,
    campaign_code    text        NOT NULL,
    campaign_version bigint      NOT NULL,
    status           text        NOT NULL,
    user_id          text,
    channel          text,
    idempotency_key  text,
    action_txs       jsonb       NOT NULL,
    created_date     timestamptz NOT NULL,
    cancelled_date   timestamptz,
    CONSTRAINT redemption_pkey PRIMARY KEY (project_id, id)
);

-- One redemption per idempotency key: the replay lookup, and the guard
-- that two concurrent redeems with one key cannot both record (the second
-- INSERT … ON CONFLICT waits for the first and then does nothing).
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
    project_id    text    NOT NULL,
    redemption_id uuid    NOT NULL,
    position      integer NOT NULL,
    quota_key     text    COLLATE "C" NOT NULL,
    amount        numeric NOT NULL,
    quota_limit   numeric NOT NULL,
    CONSTRAINT redemption_charge_pkey PRIMARY KEY (project_id, redemption_id, position),
    CONSTRAINT redemption_charge_redemption_fkey FOREIGN KEY (project_id, redemption_id)
        REFERENCES redemption (project_id, id) ON DELETE CASCADE
);
