-- Issue 40: who pays for a cost event (the original's billingType:
-- metered_api, subscription_included, ...). Events recorded before it did
-- not know, and read as the original reads a report without one: unknown.
ALTER TABLE cost_events ADD COLUMN billing_type TEXT NOT NULL DEFAULT 'unknown';
