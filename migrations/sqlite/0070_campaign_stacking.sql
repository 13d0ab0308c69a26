-- How a campaign combines with the others that apply to one request: a
-- JSON document ({"exclusive", "group", "stopAfter"}), read whole with the
-- campaign. NULL: the campaign stacks with every other (every campaign
-- saved before this column existed).
ALTER TABLE campaign ADD COLUMN stacking TEXT CHECK (stacking IS NULL OR json_valid(stacking));
