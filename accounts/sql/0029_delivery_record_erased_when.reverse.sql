DROP TRIGGER IF EXISTS before_webhook_delivery_record_erased ON webhook_deliveries;
CREATE TRIGGER before_webhook_delivery_record_erased
    BEFORE UPDATE ON webhook_deliveries
    FOR EACH ROW WHEN (OLD.claim IS NOT NULL AND NEW.claim IS NULL AND NEW.attempts > OLD.attempts)
    EXECUTE FUNCTION trg_before_webhook_delivery_record_erased();
