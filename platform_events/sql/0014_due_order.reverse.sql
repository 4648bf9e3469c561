DROP INDEX webhook_deliveries_due;
CREATE INDEX webhook_deliveries_due ON webhook_deliveries (next_retry_at) WHERE status IN ('PENDING', 'FAILED');
