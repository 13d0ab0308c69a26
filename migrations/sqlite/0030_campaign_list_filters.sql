-- The campaign list's filters (the admin console's list page): channel and
-- group are exact matches, the period filter compares start or end with an
-- instant. Each index leads with project_id like every campaign query, and
-- the equality filters end with ref_code, the list's default order. The
-- search box (a substring of name, refCode, groupName or status) cannot use
-- a B-tree: it scans the project's rows through the primary key's prefix.
CREATE INDEX campaign_channel_idx ON campaign (project_id, channel, ref_code);
CREATE INDEX campaign_group_idx ON campaign (project_id, group_name, ref_code);
CREATE INDEX campaign_start_idx ON campaign (project_id, start_date);
CREATE INDEX campaign_end_idx ON campaign (project_id, end_date);
