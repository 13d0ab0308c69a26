-- Accord, consent half (PostgreSQL).
--
-- * Append-only: no statement of the store updates or deletes a row of
--   content_version or purpose_event. A content write appends version n + 1;
--   "the" record is its highest version (the content_current view).
-- * One order: both tables take `seq` from the one sequence consent_seq, so
--   content versions and purpose events share one strictly increasing order.
-- * `data` is jsonb: filters are containment tests (`@>`) served by a GIN
--   index, sorts read typed values out of it. Numbers are kept as numeric,
--   exactly as written; strings compare bytewise (COLLATE "C"), like Rust's
--   str and SQLite.

CREATE SEQUENCE consent_seq AS bigint;

CREATE TABLE content_version (
    project_id          text        NOT NULL,
    -- The wire name: svc-privacy-notice-v1, svc-consent-v1, ...
    content_type        text        NOT NULL,
    id                  text        COLLATE "C" NOT NULL,
    version             bigint      NOT NULL CHECK (version >= 1),
    seq                 bigint      NOT NULL DEFAULT nextval('consent_seq'),
    data                jsonb       NOT NULL CHECK (jsonb_typeof(data) = 'object'),
    created_by          text        NOT NULL,
    last_modified_by    text        NOT NULL,
    created_date        timestamptz NOT NULL,
    last_modified_date  timestamptz NOT NULL,
    -- content(), content_versions(), and the "is there a newer version"
    -- probe of content_current. Two writers that both build on version n
    -- both try to insert n + 1: only one can.
    CONSTRAINT content_version_pkey PRIMARY KEY (project_id, content_type, id, version),
    CONSTRAINT content_version_seq_key UNIQUE (seq)
);

-- The current version of every record: the version with no successor.
CREATE VIEW content_current AS
SELECT v.*
FROM content_version v
WHERE NOT EXISTS (
    SELECT 1 FROM content_version n
    WHERE n.project_id = v.project_id
      AND n.content_type = v.content_type
      AND n.id = v.id
      AND n.version = v.version + 1
);

-- list_content's default order (createdDate, then id).
CREATE INDEX content_version_list_idx
    ON content_version (project_id, content_type, created_date, id);
-- consents_of_app.
CREATE INDEX content_version_application_idx
    ON content_version (project_id, content_type, (data ->> 'application'));
-- acceptance_versions, in seq order.
CREATE INDEX content_version_subject_idx
    ON content_version (project_id, content_type, (data ->> 'dataSubject'), seq);
-- purpose_names.
CREATE INDEX content_version_code_idx
    ON content_version (project_id, content_type, (data ->> 'code'));
-- list_content's filters on any attribute: `data @> '{"a": v}'` (equal) or
-- `data @> '{"a": [v]}'` (array contains).
CREATE INDEX content_version_data_idx ON content_version USING gin (data jsonb_path_ops);

CREATE TABLE purpose_event (
    project_id       text        NOT NULL,
    id               text        NOT NULL,
    seq              bigint      NOT NULL DEFAULT nextval('consent_seq'),
    data_subject     text        NOT NULL,
    app              text        NOT NULL,
    purpose_code     text        NOT NULL,
    status           text        NOT NULL,
    consent_id       text,
    acceptance_date  timestamptz,
    expired_date     timestamptz,
    withdrawal_date  timestamptz,
    recorded_at      timestamptz NOT NULL,
    CONSTRAINT purpose_event_pkey PRIMARY KEY (project_id, id),
    CONSTRAINT purpose_event_seq_key UNIQUE (seq)
);

-- purpose_events, of one app or of all, in seq order.
CREATE INDEX purpose_event_subject_idx ON purpose_event (project_id, data_subject, app, seq);
