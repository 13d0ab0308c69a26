-- Accord, events out (SQLite): the transactional outbox, webhook
-- endpoints, and one delivery per (event, endpoint) with its attempts.
--
-- An event row and its deliveries are inserted in the transaction of the
-- change they report. A delivery is claimed by setting lease_until in a
-- write transaction (SQLite runs one at a time); attempts counts every
-- claim and fences the outcome a worker writes back.

CREATE TABLE outbox_event (
    project_id    TEXT    NOT NULL,
    id            TEXT    NOT NULL,
    event_type    TEXT    NOT NULL,
    occurred_at   INTEGER NOT NULL,
    -- The consent data subject, kept apart from the payload so that an
    -- erasure can replace it with the pseudonym.
    data_subject  TEXT,
    payload       TEXT    NOT NULL CHECK (json_valid(payload)),
    CONSTRAINT outbox_event_pkey PRIMARY KEY (project_id, id)
);
CREATE INDEX outbox_event_subject_idx ON outbox_event (project_id, data_subject)
    WHERE data_subject IS NOT NULL;

CREATE TABLE webhook_endpoint (
    project_id         TEXT    NOT NULL,
    id                 TEXT    NOT NULL,
    url                TEXT    NOT NULL,
    secret             TEXT    NOT NULL,
    -- ',type,type,' or '' for every type.
    event_types        TEXT    NOT NULL,
    enabled            INTEGER NOT NULL CHECK (enabled IN (0, 1)),
    description        TEXT,
    created_date       INTEGER NOT NULL,
    last_modified_date INTEGER NOT NULL,
    CONSTRAINT webhook_endpoint_pkey PRIMARY KEY (project_id, id)
);

CREATE TABLE webhook_delivery (
    project_id    TEXT    NOT NULL,
    endpoint_id   TEXT    NOT NULL,
    event_id      TEXT    NOT NULL,
    event_type    TEXT    NOT NULL,
    state         TEXT    NOT NULL CHECK (state IN ('PENDING', 'DELIVERED', 'DEAD')),
    attempts      INTEGER NOT NULL DEFAULT 0,
    failures      INTEGER NOT NULL DEFAULT 0,
    next_at       INTEGER,
    lease_until   INTEGER,
    since         INTEGER NOT NULL,
    delivered_at  INTEGER,
    last_status   INTEGER,
    last_error    TEXT,
    CONSTRAINT webhook_delivery_pkey PRIMARY KEY (project_id, endpoint_id, event_id)
);
-- The claim's scan: pending deliveries by due time.
CREATE INDEX webhook_delivery_due_idx ON webhook_delivery (next_at)
    WHERE state = 'PENDING';

CREATE TABLE webhook_attempt (
    project_id    TEXT    NOT NULL,
    endpoint_id   TEXT    NOT NULL,
    event_id      TEXT    NOT NULL,
    attempt       INTEGER NOT NULL,
    at            INTEGER NOT NULL,
    status        INTEGER,
    error         TEXT,
    duration_ms   INTEGER NOT NULL,
    CONSTRAINT webhook_attempt_pkey PRIMARY KEY (project_id, endpoint_id, event_id, attempt)
);
