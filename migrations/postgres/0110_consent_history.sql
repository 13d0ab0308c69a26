-- Accord, a data subject's history kept as rows (PostgreSQL): one row per event
-- of the history (see src/core/consent/history.rs), so that a page of one
-- subject's history is one range of consent_history_page_idx.
--
-- * Written in the same transaction as what it comes from:
--   an acceptance version (its acceptance's rows are recomputed), a purpose
--   event (one row), a new version of a consent or privacy notice (the rows
--   of the acceptances pinning it are recomputed), an erasure.
-- * Derived rows (EXPIRED, RECONSENT_REQUIRED) are kept with `derived` = 1
--   and shown once `at` is reached.
-- * `event` is the event's JSON, as the history answers it.
-- * A database that already held consent records is filled on the first
--   open after this migration (consent_history_state.built = 0 until then).

CREATE TABLE consent_history (
    project_id      text    NOT NULL,
    data_subject    text    NOT NULL,
    at              timestamptz NOT NULL,
    derived         bigint  NOT NULL CHECK (derived IN (0, 1)),
    ord             bigint  NOT NULL,
    -- 'acceptance' or 'purpose': the record the row comes from.
    source          text    NOT NULL,
    -- The event's kind (ACCEPTED, EXPIRED, ...).
    kind            text    NOT NULL,
    record_id       text    NOT NULL,
    app             text    NOT NULL,
    consent_id      text,
    notice_id       text,
    event           text    NOT NULL,
    CONSTRAINT consent_history_pkey PRIMARY KEY (project_id, data_subject, at, derived, ord)
);

-- Recomputing one record's rows.
CREATE INDEX consent_history_record_idx ON consent_history (project_id, record_id);
-- Acceptances past their lifespan: the EXPIRED rows of a project.
CREATE INDEX consent_history_kind_idx ON consent_history (project_id, kind, at, ord);
-- The acceptances pinning a consent or a notice that gets a new version.
CREATE INDEX consent_history_consent_idx ON consent_history (project_id, consent_id);
CREATE INDEX consent_history_notice_idx ON consent_history (project_id, notice_id);

CREATE TABLE consent_history_state (
    id     integer NOT NULL PRIMARY KEY CHECK (id = 1),
    built  bigint  NOT NULL
);
INSERT INTO consent_history_state (id, built)
SELECT 1, CASE WHEN EXISTS (SELECT 1 FROM content_version WHERE content_type = 'svc-consent-acceptance-v1')
                 OR EXISTS (SELECT 1 FROM purpose_event)
               THEN 0 ELSE 1 END;
