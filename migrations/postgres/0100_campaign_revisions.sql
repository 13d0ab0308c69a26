-- Every saved state of a campaign: revision n is the campaign as saved at
-- version n (the number a redemption records as campaign_version), written
-- in the same transaction as the save. No foreign key to campaign: the
-- revisions of a deleted campaign stay readable, like its redemptions. A
-- campaign created again with the same id (an import) starts a new history.
CREATE TABLE campaign_revision (
    project_id   text        NOT NULL,
    campaign_id  uuid        NOT NULL,
    revision     bigint      NOT NULL,
    created_by   text        NOT NULL,
    created_date timestamptz NOT NULL,
    -- The whole campaign, in its wire form, read whole.
    content      jsonb       NOT NULL,
    CONSTRAINT campaign_revision_pkey PRIMARY KEY (project_id, campaign_id, revision)
);
