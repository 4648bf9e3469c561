-- An endpoint's history goes only where it was sent: a delivery made before the endpoint's URL last
-- changed is not sent again, since its payload (the person's login and e-mail) was meant for the
-- former receiver. Whoever may change an endpoint may point it anywhere from now on (that is the
-- job), not send what it already carried to a server of their choosing.

ALTER TABLE webhook_subscriptions ADD COLUMN url_since timestamptz;
UPDATE webhook_subscriptions SET url_since = created_at;
ALTER TABLE webhook_subscriptions ALTER COLUMN url_since SET NOT NULL,
                                  ALTER COLUMN url_since SET DEFAULT now();

-- When the URL took its value: kept by the database, set by nobody.
CREATE FUNCTION trg_before_webhook_sub_url_since() RETURNS trigger
    LANGUAGE plpgsql SET search_path = public, pg_temp
AS $$
BEGIN
    IF NEW.url IS DISTINCT FROM OLD.url THEN
        NEW.url_since := clock_timestamp();  -- the change itself, not its transaction's start
    ELSIF NEW.url_since IS DISTINCT FROM OLD.url_since THEN
        RAISE EXCEPTION 'webhooks: an endpoint''s url_since is when its URL last changed; it is not set by hand'
            USING ERRCODE = 'LP003';
    END IF;
    RETURN NEW;
END;
$$;

CREATE TRIGGER before_webhook_sub_url_since
    BEFORE UPDATE OF url, url_since ON webhook_subscriptions
    FOR EACH ROW
    EXECUTE FUNCTION trg_before_webhook_sub_url_since();

CREATE FUNCTION trg_before_webhook_redelivery_url() RETURNS trigger
    LANGUAGE plpgsql SET search_path = public, pg_temp
AS $$
BEGIN
    IF NEW.created_at < (SELECT s.url_since FROM webhook_subscriptions s WHERE s.id = NEW.subscription_id) THEN
        RAISE EXCEPTION 'webhooks: delivery % was made for the endpoint''s former URL; it is not sent to the new one',
            NEW.id USING ERRCODE = 'LP003', HINT = 'made-for-former-url';
    END IF;
    RETURN NEW;
END;
$$;

-- Sent again: back to PENDING from any other status (the dispatcher never moves a delivery there).
CREATE TRIGGER before_webhook_redelivery_url
    BEFORE UPDATE ON webhook_deliveries
    FOR EACH ROW
    WHEN (NEW.status = 'PENDING' AND OLD.status <> 'PENDING')
    EXECUTE FUNCTION trg_before_webhook_redelivery_url();
