-- Code pools: the codes a campaign hands out, each usable `usage_limit`
-- times. `normalized` (whitespace and dashes dropped, letters uppercased)
-- is what a redeem matches, unique in the project: the primary key is the
-- lookup of a redeem by code, one index probe however many codes there are.
-- `code` keeps the code as generated or imported, for display. No foreign
-- key to campaign: deleting a campaign keeps its codes, as its redemptions.
CREATE TABLE promo_code (
    project_id   text        NOT NULL,
    normalized   text        COLLATE "C" NOT NULL,
    code         text        NOT NULL,
    campaign_id  uuid        NOT NULL,
    usage_limit  bigint      NOT NULL CHECK (usage_limit > 0),
    used         bigint      NOT NULL DEFAULT 0 CHECK (used >= 0 AND used <= usage_limit),
    active       integer     NOT NULL DEFAULT 1 CHECK (active IN (0, 1)),
    created_date timestamptz NOT NULL,
    CONSTRAINT promo_code_pkey PRIMARY KEY (project_id, normalized)
);
-- A campaign's codes in normalized order (list, export), and whether a
-- campaign has a pool at all (a redeem without a code).
CREATE INDEX promo_code_campaign_idx ON promo_code (project_id, campaign_id, normalized);

-- The code a redemption used (normalized), so that cancel gives it back.
ALTER TABLE redemption ADD COLUMN code text;
