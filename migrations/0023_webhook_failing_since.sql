-- Issue 44: an endpoint failing for 5 days is disabled. The instant of the first failed attempt
-- since its last success (null while it succeeds), set by the delivery worker, cleared by a
-- success or an operator's enablement.
ALTER TABLE webhook_endpoints ADD COLUMN failing_since timestamptz;
