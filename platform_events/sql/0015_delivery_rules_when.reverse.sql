DROP TRIGGER before_webhook_delivery_update ON webhook_deliveries;
DROP TRIGGER before_webhook_delivery_delete ON webhook_deliveries;
CREATE TRIGGER before_webhook_delivery_change
    BEFORE UPDATE OR DELETE ON webhook_deliveries
    FOR EACH ROW
    EXECUTE FUNCTION trg_before_webhook_delivery_change();
