-- Scheduled status changes of a campaign: a JSON array of {"at", "status"}
-- sorted by "at", read whole with the campaign and evaluated at every
-- search (no job applies them). NULL: none (every campaign saved before
-- this column existed).
ALTER TABLE campaign ADD COLUMN status_schedule TEXT
    CHECK (status_schedule IS NULL OR json_valid(status_schedule));
