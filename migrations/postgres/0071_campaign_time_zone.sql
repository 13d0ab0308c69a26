-- The IANA time zone of a campaign's calendar names (${day}, ${month},
-- ${year}, ${week}). NULL: the project's zone, as the service is
-- configured (UTC by default, as before this column existed).
ALTER TABLE campaign ADD COLUMN time_zone TEXT;
