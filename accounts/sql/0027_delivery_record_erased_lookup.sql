-- The check a delivery's record makes for an erased account (0024_erasure.sql) finds the account by
-- its primary key. Joined on a.id::text = o.aggregate_id, it read every account for every record: a
-- sequential scan of the accounts table per delivery sent, growing with the accounts kept.
CREATE OR REPLACE FUNCTION trg_before_webhook_delivery_record_erased() RETURNS trigger
    LANGUAGE plpgsql SECURITY DEFINER SET search_path = public, pg_temp
AS $$
DECLARE
    account_key text;
BEGIN
    SELECT o.aggregate_id INTO account_key FROM outbox_events o WHERE o.id = NEW.event_id AND o.aggregate_type = 'account';
    -- An account's events carry its id; anything else names no account (and would not cast).
    IF account_key IS NULL OR account_key !~ '^[0-9]{1,18}$' THEN
        RETURN NEW;
    END IF;
    IF EXISTS (SELECT FROM accounts a WHERE a.id = account_key::bigint AND a.status = 'erased') THEN
        NEW.http_response_body_excerpt := NULL;
        IF NEW.status = 'FAILED' THEN
            NEW.status := 'CANCELLED';
        END IF;
    END IF;
    RETURN NEW;
END;
$$;
