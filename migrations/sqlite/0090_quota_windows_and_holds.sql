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
    project_id     TEXT    NOT NULL,
    quota_key      TEXT    NOT NULL,
    window_seconds INTEGER NOT NULL,
    owner_id       TEXT    NOT NULL,
    amount         TEXT    NOT NULL,
    charged_at     INTEGER NOT NULL,
    counts_until   INTEGER,
    expires_at     INTEGER,
    CONSTRAINT quota_mark_pkey PRIMARY KEY (project_id, quota_key, window_seconds, owner_id)
);
-- The window sum reads only the marks that still count.
CREATE INDEX quota_mark_until_idx
    ON quota_mark (project_id, quota_key, window_seconds, counts_until);

-- The window of a redemption's charge (NULL: a calendar quota).
ALTER TABLE redemption_charge ADD COLUMN window_seconds INTEGER;

-- A hold: a redemption planned when placed, recorded when confirmed.
CREATE TABLE quota_hold (
    project_id       TEXT    NOT NULL,
    id               TEXT    NOT NULL,
    redemption_id    TEXT    NOT NULL,
    campaign_id      TEXT    NOT NULL,
    campaign_code    TEXT    NOT NULL,
    campaign_version INTEGER NOT NULL,
    status           TEXT    NOT NULL,
    user_id          TEXT,
    channel          TEXT,
    action_txs       TEXT    NOT NULL CHECK (json_valid(action_txs)),
    quotas           TEXT    NOT NULL CHECK (json_valid(quotas)),
    created_date     INTEGER NOT NULL,
    expires_at       INTEGER NOT NULL,
    ended_date       INTEGER,
    CONSTRAINT quota_hold_pkey PRIMARY KEY (project_id, id)
);
-- A campaign's live holds (the quota view), soonest expiry first.
CREATE INDEX quota_hold_live_idx ON quota_hold (project_id, campaign_id, status, expires_at);
