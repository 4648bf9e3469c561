-- The erased-account check of a recorded attempt (accounts/sql/0027_delivery_record_erased_lookup.sql)
-- runs only when it has something to do: an answer's excerpt to drop, or a failure to cancel. An attempt
-- recorded with an empty answer and no retry (the 204 a receiver usually answers) holds nothing of the
-- person, and the check's call and lookup were a third of PostgreSQL's time to record it (11 of 33 µs a
-- delivery, EXPLAIN ANALYZE of a record of fifty).
DROP TRIGGER IF EXISTS before_webhook_delivery_record_erased ON webhook_deliveries;
CREATE TRIGGER before_webhook_delivery_record_erased
    BEFORE UPDATE ON webhook_deliveries
    FOR EACH ROW WHEN (OLD.claim IS NOT NULL AND NEW.claim IS NULL AND NEW.attempts > OLD.attempts
                       AND (NEW.http_response_body_excerpt <> '' OR NEW.status = 'FAILED'))
    EXECUTE FUNCTION trg_before_webhook_delivery_record_erased();
