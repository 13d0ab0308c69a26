-- Rolling quota windows and quota holds.
--
-- A mark is a charge that counts for a time, per counter (key and window;
-- window_seconds 0 is a calendar quota) and owner (the redemption or hold
-- that made it):
-- * a rolling quota's charges are marks only: its usage at an instant is
--   the sum of the marks with counts_until after it (and, for a hold's,
--   expires_at after it);
-- * a calendar quota's charge by a hold is added to quota_usage.used, as a
--   redeem's is, and marked with the hold's expiry; the next charge of the
--   key gives expired ones back, and every read subtracts those expired at
--   its instant.
-- A rolling counter also has a quota_usage row (used 0): the row the
-- charges of its key lock, and what the quota view's key scan finds.
CREATE TABLE quota_mark (
    project_id     text        NOT NULL,
    quota_key      text        COLLATE "C" NOT NULL,
    window_seconds bigint      NOT NULL,
    owner_id       uuid        NOT NULL,
    amount         numeric     NOT NULL,
    charged_at     timestamptz NOT NULL,
    counts_until   timestamptz,
    expires_at     timestamptz,
    CONSTRAINT quota_mark_pkey PRIMARY KEY (project_id, quota_key, window_seconds, owner_id)
);
-- The window sum reads only the marks that still count.
CREATE INDEX quota_mark_until_idx
    ON quota_mark (project_id, quota_key, window_seconds, counts_until);

-- The window of a redemption's charge (NULL: a calendar quota).
ALTER TABLE redemption_charge ADD COLUMN window_seconds bigint;

-- A hold: a redemption planned when placed, recorded when confirmed.
CREATE TABLE quota_hold (
    project_id       text        NOT NULL,
    id               uuid        NOT NULL,
    redemption_id    uuid        NOT NULL,
    campaign_id      uuid        NOT NULL,
    campaign_code    text        NOT NULL,
    campaign_version bigint      NOT NULL,
    status           text        NOT NULL,
    user_id          text,
    channel          text,
    action_txs       jsonb       NOT NULL,
    quotas           jsonb       NOT NULL,
    created_date     timestamptz NOT NULL,
    expires_at       timestamptz NOT NULL,
    ended_date       timestamptz,
    CONSTRAINT quota_hold_pkey PRIMARY KEY (project_id, id)
);
-- A campaign's live holds (the quota view), soonest expiry first.
CREATE INDEX quota_hold_live_idx ON quota_hold (project_id, campaign_id, status, expires_at);
