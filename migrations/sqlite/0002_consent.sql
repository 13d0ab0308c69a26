-- Accord, consent half (SQLite).
--
-- * Append-only: no statement of the store updates or deletes a row of
--   content_version or purpose_event. A content write appends version n + 1;
--   "the" record is its highest version (the content_current view).
-- * One order: every appended row takes the next value of consent_seq, a
--   one-row counter bumped in the same BEGIN IMMEDIATE transaction as the
--   append, so content versions and purpose events share one strictly
--   increasing `seq`.
-- * Timestamps are INTEGER microseconds since the Unix epoch, UTC (as in
--   0001_campaigns.sql).
-- * `data` is the record's JSON object as serde_json wrote it; lists filter
--   and sort on it with json_each / json_type / json_extract.

CREATE TABLE consent_seq (
    id   INTEGER NOT NULL PRIMARY KEY CHECK (id = 1),
    last INTEGER NOT NULL
);
INSERT INTO consent_seq (id, last) VALUES (1, 0);

CREATE TABLE content_version (
    project_id          TEXT    NOT NULL,
    -- The wire name: svc-privacy-notice-v1, svc-consent-v1, ...
    content_type        TEXT    NOT NULL,
    id                  TEXT    NOT NULL,
    version             INTEGER NOT NULL CHECK (version >= 1),
    seq                 INTEGER NOT NULL,
    data                TEXT    NOT NULL CHECK (json_type(data) = 'object'),
    -- For sorting: {attribute: key} for every top-level number of `data`,
    -- where the key is a text whose byte order is the numbers' exact
    -- decimal order (computed by the store). SQLite has no decimal type and
    -- its text-to-double conversion is not always correctly rounded, so
    -- json_extract alone could tie or swap two numbers one unit in the last
    -- place apart.
    number_keys         TEXT    NOT NULL CHECK (json_type(number_keys) = 'object'),
    created_by          TEXT    NOT NULL,
    last_modified_by    TEXT    NOT NULL,
    created_date        INTEGER NOT NULL,
    last_modified_date  INTEGER NOT NULL,
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
    ON content_version (project_id, content_type, json_extract(data, '$.application'));
-- acceptance_versions, in seq order.
CREATE INDEX content_version_subject_idx
    ON content_version (project_id, content_type, json_extract(data, '$.dataSubject'), seq);
-- purpose_names.
CREATE INDEX content_version_code_idx
    ON content_version (project_id, content_type, json_extract(data, '$.code'));
-- Other list filters and sort keys scan one project's records of one type
-- (reached through the list index's prefix): SQLite has no index over every
-- attribute of a JSON document.

CREATE TABLE purpose_event (
    project_id       TEXT    NOT NULL,
    id               TEXT    NOT NULL,
    seq              INTEGER NOT NULL,
    data_subject     TEXT    NOT NULL,
    app              TEXT    NOT NULL,
    purpose_code     TEXT    NOT NULL,
    status           TEXT    NOT NULL,
    consent_id       TEXT,
    acceptance_date  INTEGER,
    expired_date     INTEGER,
    withdrawal_date  INTEGER,
    recorded_at      INTEGER NOT NULL,
    CONSTRAINT purpose_event_pkey PRIMARY KEY (project_id, id),
    CONSTRAINT purpose_event_seq_key UNIQUE (seq)
);

-- purpose_events, of one app or of all, in seq order.
CREATE INDEX purpose_event_subject_idx ON purpose_event (project_id, data_subject, app, seq);
