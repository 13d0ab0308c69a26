-- Accord, uploaded files (SQLite): the screens a consent shows
-- (`formScreen`), stored content-addressed by the SHA-256 of their bytes,
-- per project. Never updated: uploading the same bytes again finds the row.

CREATE TABLE accord_file (
    project_id    TEXT    NOT NULL,
    sha256        TEXT    NOT NULL CHECK (length(sha256) = 64),
    content_type  TEXT    NOT NULL,
    size          INTEGER NOT NULL CHECK (size >= 0),
    bytes         BLOB    NOT NULL,
    created_by    TEXT    NOT NULL,
    created_date  INTEGER NOT NULL,
    CONSTRAINT accord_file_pkey PRIMARY KEY (project_id, sha256)
);
