-- The order in which quota keys were first charged, for a reader that
-- keeps the set of charged keys and asks only for those charged since
-- (`charged_keys`): an INTEGER PRIMARY KEY, an alias of the rowid that
-- VACUUM keeps. Writers take turns on SQLite and rows are never deleted,
-- so a new row's number (one above the largest) grows in commit order.
CREATE TABLE quota_usage_ordered (
    charged_seq INTEGER PRIMARY KEY,
    project_id  TEXT NOT NULL,
    quota_key   TEXT NOT NULL,
    used        TEXT NOT NULL,
    CONSTRAINT quota_usage_key UNIQUE (project_id, quota_key)
);
INSERT INTO quota_usage_ordered (project_id, quota_key, used)
    SELECT project_id, quota_key, used FROM quota_usage ORDER BY rowid;
DROP TABLE quota_usage;
ALTER TABLE quota_usage_ordered RENAME TO quota_usage;
