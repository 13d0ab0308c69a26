-- A fingerprint of the request that recorded a redemption under an
-- idempotency key: a later request with the key but another body is
-- refused instead of replayed. NULL for redemptions recorded before this
-- column existed (their replays compare the campaign code only).
ALTER TABLE redemption ADD COLUMN request_fingerprint TEXT;
