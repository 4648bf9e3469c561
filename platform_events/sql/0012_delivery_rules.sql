-- A delivery's identity and its being due are kept by the database (found by an attack, issue 12).
--
-- The runtime role may record attempts (the dispatcher) and send deliveries again (staff), but it
-- could also point a partner's delivery at another endpoint, or delete a due one and then its
-- event, unaudited. Now what a delivery is (endpoint, event, order) cannot change, and a due one
-- (PENDING or FAILED) cannot be deleted by itself: only with its endpoint, which is audited
-- (webhook.deleted).
CREATE FUNCTION trg_before_webhook_delivery_change() RETURNS trigger
    LANGUAGE plpgsql SET search_path = public, pg_temp
AS $$
BEGIN
    IF TG_OP = 'DELETE' THEN
        -- Depth 1: a DELETE of the delivery itself; deeper: its endpoint's ON DELETE CASCADE.
        IF OLD.status IN ('PENDING', 'FAILED') AND pg_trigger_depth() = 1 THEN
            RAISE EXCEPTION 'platform_events: delivery % is still due; it cannot be deleted', OLD.id
                USING ERRCODE = 'LP003';
        END IF;
        RETURN OLD;
    END IF;
    IF (NEW.subscription_id, NEW.event_id, NEW.event_seq, NEW.ordering_key)
       IS DISTINCT FROM (OLD.subscription_id, OLD.event_id, OLD.event_seq, OLD.ordering_key) THEN
        RAISE EXCEPTION 'platform_events: a delivery''s endpoint, event and order cannot be changed'
            USING ERRCODE = 'LP003';
    END IF;
    RETURN NEW;
END;
$$;

CREATE TRIGGER before_webhook_delivery_change
    BEFORE UPDATE OR DELETE ON webhook_deliveries
    FOR EACH ROW
    EXECUTE FUNCTION trg_before_webhook_delivery_change();
