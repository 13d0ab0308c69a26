-- Accord, events out (PostgreSQL): the transactional outbox, webhook
-- endpoints, and one delivery per (event, endpoint) with its attempts.
--
-- An event row and its deliveries are inserted in the transaction of the
-- change they report. A delivery is claimed by setting lease_until (a
-- claim skips rows another worker has locked, FOR UPDATE SKIP LOCKED, and
-- rows whose lease has not expired); attempts counts every claim and
-- fences the outcome a worker writes back.

CREATE TABLE outbox_event (
    project_id    text        NOT NULL,
    id            uuid        NOT NULL,
    event_type    text        NOT NULL,
    occurred_at   timestamptz NOT NULL,
    -- The consent data subject, kept apart from the payload so that an
    -- erasure can replace it with the pseudonym.
    data_subject  text,
    payload       jsonb       NOT NULL,
    CONSTRAINT outbox_event_pkey PRIMARY KEY (project_id, id)
);
CREATE INDEX outbox_event_subject_idx ON outbox_event (project_id, data_subject)
    WHERE data_subject IS NOT NULL;

CREATE TABLE webhook_endpoint (
    project_id         text        NOT NULL,
    id                 uuid        NOT NULL,
    url                text        NOT NULL,
    secret             text        NOT NULL,
    -- ',type,type,' or '' for every type.
    event_types        text        NOT NULL,
    enabled            integer     NOT NULL CHECK (enabled IN (0, 1)),
    description        text,
    created_date       timestamptz NOT NULL,
    last_modified_date timestamptz NOT NULL,
    CONSTRAINT webhook_endpoint_pkey PRIMARY KEY (project_id, id)
);

CREATE TABLE webhook_delivery (
    project_id    text        NOT NULL,
    endpoint_id   uuid        NOT NULL,
    event_id      uuid        NOT NULL,
    event_type    text        NOT NULL,
    state         text        NOT NULL CHECK (state IN ('PENDING', 'DELIVERED', 'DEAD')),
    attempts      integer     NOT NULL DEFAULT 0,
    failures      integer     NOT NULL DEFAULT 0,
    next_at       timestamptz,
    lease_until   timestamptz,
    since         timestamptz NOT NULL,
    delivered_at  timestamptz,
    last_status   bigint,
    last_error    text,
    CONSTRAINT webhook_delivery_pkey PRIMARY KEY (project_id, endpoint_id, event_id)
);
-- The claim's scan: pending deliveries by due time.
CREATE INDEX webhook_delivery_due_idx ON webhook_delivery (next_at)
    WHERE state = 'PENDING';

CREATE TABLE webhook_attempt (
    project_id    text        NOT NULL,
    endpoint_id   uuid        NOT NULL,
    event_id      uuid        NOT NULL,
    attempt       integer     NOT NULL,
    at            timestamptz NOT NULL,
    status        bigint,
    error         text,
    duration_ms   bigint      NOT NULL,
    CONSTRAINT webhook_attempt_pkey PRIMARY KEY (project_id, endpoint_id, event_id, attempt)
);
