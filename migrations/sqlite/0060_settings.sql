-- Values the service keeps with its data: the development signing secret
-- of `accord serve --demo` (so that a token copied from one run still works
-- after a restart).
CREATE TABLE accord_settings (
    name TEXT PRIMARY KEY,
    value TEXT NOT NULL
);
