-- 0027 undone: the check as 0024_erasure.sql made it.
CREATE OR REPLACE FUNCTION trg_before_webhook_delivery_record_erased() RETURNS trigger
    LANGUAGE plpgsql SECURITY DEFINER SET search_path = public, pg_temp
AS $$
BEGIN
    IF EXISTS (SELECT FROM outbox_events o JOIN accounts a ON o.aggregate_type = 'account' AND a.id::text = o.aggregate_id
               WHERE o.id = NEW.event_id AND a.status = 'erased') THEN
        NEW.http_response_body_excerpt := NULL;
        IF NEW.status = 'FAILED' THEN
            NEW.status := 'CANCELLED';
        END IF;
    END IF;
    RETURN NEW;
END;
$$;
