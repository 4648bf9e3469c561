DROP TRIGGER before_processed_event_update ON processed_events;
DROP FUNCTION trg_before_processed_event_update();
DROP TRIGGER after_processed_event_delete ON processed_events;
DROP FUNCTION trg_after_processed_event_delete();
DROP TRIGGER after_processed_event_insert ON processed_events;
DROP FUNCTION trg_after_processed_event_insert();

DROP FUNCTION outbox_events_old_count(int);
DROP FUNCTION outbox_events_delete_old(int, int);
CREATE OR REPLACE FUNCTION trg_before_outbox_event_delete() RETURNS trigger
    LANGUAGE plpgsql SET search_path = public, pg_temp
AS $$
BEGIN
    IF EXISTS (SELECT FROM webhook_deliveries d WHERE d.event_id = OLD.id AND d.status IN ('PENDING', 'FAILED')) THEN
        RAISE EXCEPTION 'platform_events: event % is still due to an endpoint; it cannot be deleted', OLD.id
            USING ERRCODE = 'LP003';
    END IF;
    RETURN OLD;
END;
$$;
DROP FUNCTION outbox_event_due_to(uuid, text);

DROP TABLE outbox_consumers;
DROP FUNCTION trg_after_outbox_consumer_audit();
DROP FUNCTION outbox_consumer_register(text, text[]);

DROP TRIGGER before_webhook_delivery_move ON webhook_deliveries;
DROP FUNCTION trg_before_webhook_delivery_move();
