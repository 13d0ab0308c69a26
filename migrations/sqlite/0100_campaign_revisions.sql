-- Every saved state of a campaign: revision n is the campaign as saved at
-- version n (the number a redemption records as campaign_version), written
-- in the same transaction as the save. No foreign key to campaign: the
-- revisions of a deleted campaign stay readable, like its redemptions. A
-- campaign created again with the same id (an import) starts a new history.
CREATE TABLE campaign_revision (
    project_id   TEXT    NOT NULL,
    campaign_id  TEXT    NOT NULL,
    revision     INTEGER NOT NULL,
    created_by   TEXT    NOT NULL,
    -- Microseconds since the Unix epoch, UTC, as every timestamp here.
    created_date INTEGER NOT NULL,
    -- The whole campaign, in its wire form, read whole.
    content      TEXT    NOT NULL CHECK (json_valid(content)),
    CONSTRAINT campaign_revision_pkey PRIMARY KEY (project_id, campaign_id, revision)
);
