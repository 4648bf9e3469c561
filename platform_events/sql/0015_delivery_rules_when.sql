-- The delivery rules (0012) without entering PL/pgSQL on every update (issue 12).
--
-- Each delivery is updated twice on its way (the dispatcher's claim, then its record), and the rules'
-- function ran for both, only to find the identity unchanged: about a tenth of the dispatcher's
-- database time. The checks move into the triggers' WHEN conditions, which the executor evaluates
-- itself; the function now runs only for a change it refuses (or, for a delete of a due delivery,
-- to tell its endpoint's cascade, which may, from a delete of the delivery itself, which may not).
DROP TRIGGER before_webhook_delivery_change ON webhook_deliveries;

CREATE TRIGGER before_webhook_delivery_update
    BEFORE UPDATE ON webhook_deliveries
    FOR EACH ROW
    WHEN ((NEW.subscription_id, NEW.event_id, NEW.event_seq, NEW.ordering_key)
          IS DISTINCT FROM (OLD.subscription_id, OLD.event_id, OLD.event_seq, OLD.ordering_key))
    EXECUTE FUNCTION trg_before_webhook_delivery_change();

CREATE TRIGGER before_webhook_delivery_delete
    BEFORE DELETE ON webhook_deliveries
    FOR EACH ROW
    WHEN (OLD.status IN ('PENDING', 'FAILED'))
    EXECUTE FUNCTION trg_before_webhook_delivery_change();
