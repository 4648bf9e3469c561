-- The dispatcher's claim walks the due deliveries in its own order and stops at its batch (issue 12).
-- The planner estimates the claim's "no earlier event of the account still due" anti-join at a few
-- rows whatever the queue holds, so it read, checked and sorted the whole queue for every batch:
-- 7 ms for 50 deliveries with 2,000 due, and growing with the queue. The index now holds the claim's
-- whole order (platform_events/webhooks/dispatch.py turns sorting off for the claim, which leaves
-- the ordered walk as the one plan).
DROP INDEX webhook_deliveries_due;
CREATE INDEX webhook_deliveries_due ON webhook_deliveries (next_retry_at, event_seq)
    WHERE status IN ('PENDING', 'FAILED');
