-- When each quota key was first charged, by the server's clock in
-- microseconds, for a reader that keeps the set of charged keys and asks
-- only for those charged since (`charged_keys`). Rows written before this
-- column existed read 0: a first read takes every key regardless.
ALTER TABLE quota_usage ADD COLUMN first_charged_us bigint NOT NULL DEFAULT 0;
ALTER TABLE quota_usage
    ALTER COLUMN first_charged_us
    SET DEFAULT CAST(extract(epoch FROM clock_timestamp()) * 1000000 AS bigint);
CREATE INDEX quota_usage_first_charged_idx ON quota_usage (project_id, first_charged_us);
