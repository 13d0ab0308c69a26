-- Accord, uploaded files (PostgreSQL): the screens a consent shows
-- (`formScreen`), stored content-addressed by the SHA-256 of their bytes,
-- per project. Never updated: uploading the same bytes again finds the row
-- (INSERT … ON CONFLICT DO NOTHING).

CREATE TABLE accord_file (
    project_id    text        NOT NULL,
    sha256        text        NOT NULL CHECK (length(sha256) = 64),
    content_type  text        NOT NULL,
    size          bigint      NOT NULL CHECK (size >= 0),
    bytes         bytea       NOT NULL,
    created_by    text        NOT NULL,
    created_date  timestamptz NOT NULL,
    CONSTRAINT accord_file_pkey PRIMARY KEY (project_id, sha256)
);
