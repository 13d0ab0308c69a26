-- A hold on a campaign with a code pool reserves one use of its code:
-- `code` is the code (normalized), and `code_held` is 1 while the hold's
-- use is counted in promo_code.used. Confirming keeps the use for the
-- redemption, releasing gives it back; an expired hold's use is given
-- back by the next use of the code that finds it has none left (or the
-- sweep), which sets `code_held` to 0 under the hold's row lock, so a
-- confirmation racing it sees the hold expired.
ALTER TABLE quota_hold ADD COLUMN code TEXT;
ALTER TABLE quota_hold ADD COLUMN code_held INTEGER NOT NULL DEFAULT 0;
-- The holds whose use a code counts, by code and expiry.
CREATE INDEX quota_hold_code_idx ON quota_hold (project_id, code, expires_at) WHERE code_held = 1;
