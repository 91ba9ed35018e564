-- The head carries its own seal, HMAC(audit key, "head:<seq>:<seal>"): deleting the newest
-- records and rewriting the head to an earlier record's seq and seal no longer verifies, since
-- that head was never sealed. Empty until the first append after this migration.
ALTER TABLE audit_head ADD COLUMN head_seal text NOT NULL DEFAULT '';
