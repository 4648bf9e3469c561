-- Platform events (issue 12; seed 004): the outbox, webhook endpoints and their deliveries, and the
-- consumers' record of what they processed. README, "Platform events".
--
-- Where this differs from seed 004, and why:
-- * outbox_events is written by triggers (accounts/sql/0013_outbox.sql) through outbox_append_many(),
--   which fans each event out to its endpoints' webhook_deliveries in the same statement. An event
--   therefore has no publishing state of its own: the seed's status, attempts, last_error and
--   published_at are dropped; what is due lives per (endpoint, event) in webhook_deliveries and per
--   (consumer group, event) in processed_events. Nothing reads by a sequence cursor, so a transaction
--   that commits late loses nothing: its deliveries appear when it commits, and the dispatcher claims
--   due rows with FOR UPDATE SKIP LOCKED.
-- * seq orders the events of one aggregate. Every transaction that publishes an account's event holds
--   the account's row lock when it takes its seq (its UPDATE or DELETE holds it; the password trigger
--   takes it), so two transactions that publish events of one account commit in seq order.
-- * webhook_deliveries is unique per (subscription, event): the seed allowed an event to be queued
--   twice for one endpoint. It carries the event's seq and ordering key, so that the dispatcher can
--   hold back an account's later event while an earlier one to the same endpoint is undelivered.
--   Its times are NULL until an attempt is made (the seed defaulted them to the row's creation).
--   ON DELETE CASCADE from its endpoint: with the seed's RESTRICT an endpoint that ever received an
--   event could never be deleted.
-- * webhook_subscriptions keeps its secret encrypted (AES-256-GCM in the application, under a key
--   named by secret_key_id so that keys can rotate), and a previous secret during a rotation's
--   overlap window, when both signatures are sent.
-- * processed_events is keyed on (consumer_group, event_id): keyed on event_id alone, as in the seed,
--   only the first group could ever record an event.

CREATE TABLE outbox_events (
    id             uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    seq            bigint GENERATED ALWAYS AS IDENTITY,
    aggregate_type varchar(64)  NOT NULL,
    aggregate_id   varchar(64)  NOT NULL,
    event_type     varchar(128) NOT NULL,
    -- The Standard Webhooks shape: {"type": ..., "timestamp": ..., "data": {...}}.
    payload        jsonb        NOT NULL CHECK (payload ?& ARRAY['type', 'timestamp', 'data']),
    created_at     timestamptz  NOT NULL DEFAULT now()
);
-- An aggregate's events in order (the admin's "events of this account").
CREATE INDEX outbox_events_aggregate ON outbox_events (aggregate_type, aggregate_id, seq);
-- The internal consumers read the events of their types in order (platform_events/outbox/consumers.py).
CREATE INDEX outbox_events_type ON outbox_events (event_type, seq);
-- Retention walks the oldest first; rows arrive in time order, so a BRIN index is enough.
CREATE INDEX outbox_events_created ON outbox_events USING brin (created_at);

CREATE TABLE webhook_subscriptions (
    id                        uuid          PRIMARY KEY DEFAULT gen_random_uuid(),
    owner_id                  varchar(64)   NOT NULL,  -- whose endpoint: a partner or a service
    description               text          NOT NULL DEFAULT '',
    url                       varchar(2048) NOT NULL,
    events                    text[]        NOT NULL CHECK (cardinality(events) > 0),
    secret_encrypted          bytea         NOT NULL,
    secret_key_id             varchar(64)   NOT NULL,
    previous_secret_encrypted bytea,
    previous_secret_key_id    varchar(64),
    previous_secret_until     timestamptz,
    status                    varchar(32)   NOT NULL DEFAULT 'ACTIVE',
    disabled_reason           text,
    failure_count             int           NOT NULL DEFAULT 0,
    failing_since             timestamptz,
    last_success_at           timestamptz,
    last_failure_at           timestamptz,
    created_at                timestamptz   NOT NULL DEFAULT now(),
    updated_at                timestamptz   NOT NULL DEFAULT now(),

    CONSTRAINT ck_webhook_subs_status CHECK (status IN ('ACTIVE', 'PAUSED', 'DISABLED_DEAD')),
    CONSTRAINT ck_webhook_subs_previous CHECK (
        (previous_secret_encrypted IS NULL) = (previous_secret_key_id IS NULL)
        AND (previous_secret_encrypted IS NULL) = (previous_secret_until IS NULL))
);
CREATE INDEX webhook_subs_owner ON webhook_subscriptions (owner_id);
CREATE INDEX webhook_subs_events ON webhook_subscriptions USING gin (events) WHERE status <> 'DISABLED_DEAD';

CREATE FUNCTION trg_before_webhook_sub_update() RETURNS trigger
    LANGUAGE plpgsql SET search_path = public, pg_temp
AS $$
BEGIN
    NEW.updated_at := now();
    -- Enabled again: its failures are history.
    IF OLD.status = 'DISABLED_DEAD' AND NEW.status <> 'DISABLED_DEAD' THEN
        NEW.disabled_reason := NULL;
        NEW.failing_since := NULL;
        NEW.failure_count := 0;
    END IF;
    RETURN NEW;
END;
$$;

CREATE TRIGGER before_webhook_sub_update
    BEFORE UPDATE ON webhook_subscriptions
    FOR EACH ROW
    EXECUTE FUNCTION trg_before_webhook_sub_update();

CREATE TABLE webhook_deliveries (
    id                         uuid        PRIMARY KEY DEFAULT gen_random_uuid(),
    subscription_id            uuid        NOT NULL REFERENCES webhook_subscriptions (id) ON DELETE CASCADE,
    event_id                   uuid        NOT NULL REFERENCES outbox_events (id) ON DELETE CASCADE,
    event_seq                  bigint      NOT NULL,
    ordering_key               varchar(140) NOT NULL,  -- aggregate_type:aggregate_id
    status                     varchar(32) NOT NULL DEFAULT 'PENDING',
    attempts                   int         NOT NULL DEFAULT 0,
    next_retry_at              timestamptz NOT NULL DEFAULT now(),  -- when it is due (first or again)
    lease_until                timestamptz,
    claim                      uuid,
    http_status                int,
    http_response_body_excerpt varchar(2048),
    latency_ms                 int,
    first_attempt_at           timestamptz,
    last_attempt_at            timestamptz,
    created_at                 timestamptz NOT NULL DEFAULT now(),

    CONSTRAINT webhook_deliveries_once UNIQUE (subscription_id, event_id),
    CONSTRAINT ck_webhook_deliveries_status CHECK (status IN ('PENDING', 'DELIVERED', 'FAILED', 'PERMANENTLY_FAILED')),
    CONSTRAINT ck_webhook_deliveries_claim CHECK ((lease_until IS NULL) = (claim IS NULL))
);
-- Due deliveries, soonest first (PENDING: not tried yet, or sent again by staff; FAILED: to retry).
CREATE INDEX webhook_deliveries_due ON webhook_deliveries (next_retry_at) WHERE status IN ('PENDING', 'FAILED');
-- An account's earlier undelivered event to the same endpoint holds its later ones back.
CREATE INDEX webhook_deliveries_order ON webhook_deliveries (subscription_id, ordering_key, event_seq)
    WHERE status IN ('PENDING', 'FAILED');
CREATE INDEX webhook_deliveries_event ON webhook_deliveries (event_id);

CREATE TABLE processed_events (
    consumer_group varchar(64) NOT NULL,
    -- No foreign key: retention may delete the event first, and the record must outlive a redelivery.
    event_id       uuid        NOT NULL,
    processed_at   timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (consumer_group, event_id)
);
CREATE INDEX processed_events_processed ON processed_events (processed_at);

-- Appends the events of one type for many aggregates and queues them for every endpoint that takes
-- the type (paused ones included: they get them when resumed). Run as the owner: the runtime role
-- may not insert events or deliveries itself.
CREATE FUNCTION outbox_append_many(aggregate_type text, aggregate_ids text[], event_type text, datas jsonb[])
    RETURNS void
    LANGUAGE plpgsql SECURITY DEFINER SET search_path = public, pg_temp
AS $$
DECLARE
    queued bigint;
BEGIN
    WITH appended AS (
        INSERT INTO outbox_events (aggregate_type, aggregate_id, event_type, payload)
        SELECT outbox_append_many.aggregate_type, e.aggregate_id, outbox_append_many.event_type,
               jsonb_build_object('type', outbox_append_many.event_type,
                                  'timestamp', to_char(now() AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"'),
                                  'data', e.data)
        FROM unnest(aggregate_ids, datas) WITH ORDINALITY AS e(aggregate_id, data, n)
        ORDER BY e.n
        RETURNING id, seq, outbox_events.aggregate_type, outbox_events.aggregate_id, outbox_events.event_type
    ), queued_rows AS (
        INSERT INTO webhook_deliveries (subscription_id, event_id, event_seq, ordering_key)
        SELECT s.id, a.id, a.seq, a.aggregate_type || ':' || a.aggregate_id
        FROM appended a
        JOIN webhook_subscriptions s ON s.events @> ARRAY[a.event_type::text] AND s.status <> 'DISABLED_DEAD'
        RETURNING 1
    )
    SELECT count(*) INTO queued FROM queued_rows;
    IF queued > 0 THEN
        -- Once per transaction, whatever the number of statements (PostgreSQL folds equal notifications).
        NOTIFY webhook_delivery;
    END IF;
END;
$$;
REVOKE EXECUTE ON FUNCTION outbox_append_many(text, text[], text, jsonb[]) FROM PUBLIC;

-- An event stays while an endpoint still has it to receive: retention (or anyone) deleting it would
-- drop a due webhook unseen. Deliveries that are over go with their event.
CREATE FUNCTION trg_before_outbox_event_delete() RETURNS trigger
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

CREATE TRIGGER before_outbox_event_delete
    BEFORE DELETE ON outbox_events
    FOR EACH ROW
    EXECUTE FUNCTION trg_before_outbox_event_delete();

-- Events are facts: what was published stays as it was.
CREATE FUNCTION trg_before_outbox_event_update() RETURNS trigger
    LANGUAGE plpgsql SET search_path = public, pg_temp
AS $$
BEGIN
    RAISE EXCEPTION 'platform_events: outbox events cannot be changed' USING ERRCODE = 'LP003';
END;
$$;

CREATE TRIGGER before_outbox_event_update
    BEFORE UPDATE ON outbox_events
    FOR EACH ROW
    EXECUTE FUNCTION trg_before_outbox_event_update();

-- Staff's changes to an endpoint are audited (webhook.*), never its secret: a rotation says only when.
-- The dispatcher's bookkeeping (failure counts, last success) is not; its disabling of an endpoint is.
CREATE FUNCTION trg_after_webhook_sub_audit() RETURNS trigger
    LANGUAGE plpgsql SECURITY DEFINER SET search_path = public, pg_temp
AS $$
DECLARE
    shown text[] := ARRAY['owner_id', 'description', 'url', 'events', 'status', 'disabled_reason'];
    before jsonb;
    after jsonb;
    diff record;
    action text;
BEGIN
    IF TG_OP = 'INSERT' THEN
        after := jsonb_strip_nulls((SELECT jsonb_object_agg(key, value) FROM jsonb_each(to_jsonb(NEW)) WHERE key = ANY(shown)));
        PERFORM audit_record('webhook.created', 'webhook_endpoint', NEW.id::text, NULL, after);
        RETURN NULL;
    ELSIF TG_OP = 'DELETE' THEN
        before := jsonb_strip_nulls((SELECT jsonb_object_agg(key, value) FROM jsonb_each(to_jsonb(OLD)) WHERE key = ANY(shown)));
        PERFORM audit_record('webhook.deleted', 'webhook_endpoint', OLD.id::text, before, NULL);
        RETURN NULL;
    END IF;
    before := (SELECT jsonb_object_agg(key, value) FROM jsonb_each(to_jsonb(OLD)) WHERE key = ANY(shown));
    after := (SELECT jsonb_object_agg(key, value) FROM jsonb_each(to_jsonb(NEW)) WHERE key = ANY(shown));
    -- A rotation sets the end of the overlap window; re-encrypting under a new key leaves it as it was.
    IF NEW.previous_secret_until IS NOT NULL AND NEW.previous_secret_until IS DISTINCT FROM OLD.previous_secret_until THEN
        PERFORM audit_record('webhook.secret_rotated', 'webhook_endpoint', NEW.id::text,
                             NULL, jsonb_build_object('previous_secret_until', NEW.previous_secret_until));
    END IF;
    IF before IS NOT DISTINCT FROM after THEN
        RETURN NULL;  -- bookkeeping, or a re-encryption under a new key: nothing staff changed
    END IF;
    diff := audit_diff(before, after);
    action := CASE
        WHEN NEW.status = OLD.status THEN 'webhook.changed'
        WHEN NEW.status = 'PAUSED' THEN 'webhook.paused'
        WHEN NEW.status = 'DISABLED_DEAD' THEN 'webhook.disabled'
        WHEN OLD.status = 'PAUSED' THEN 'webhook.resumed'
        ELSE 'webhook.enabled'
    END;
    PERFORM audit_record(action, 'webhook_endpoint', NEW.id::text, diff.diff_before, diff.diff_after);
    RETURN NULL;
END;
$$;

CREATE TRIGGER after_webhook_sub_audit
    AFTER INSERT OR UPDATE OR DELETE ON webhook_subscriptions
    FOR EACH ROW
    EXECUTE FUNCTION trg_after_webhook_sub_audit();

-- A delivery sent again (staff's "redeliver": back to PENDING from any other state) is audited, and
-- wakes the dispatcher. Once per statement: staff may redeliver hundreds at once.
CREATE FUNCTION trg_after_webhook_redelivery() RETURNS trigger
    LANGUAGE plpgsql SECURITY DEFINER SET search_path = public, pg_temp
AS $$
DECLARE
    ids text[];
    befores jsonb[];
    afters jsonb[];
BEGIN
    SELECT array_agg(n.id::text ORDER BY n.id),
           array_agg(jsonb_build_object('status', o.status, 'attempts', o.attempts) ORDER BY n.id),
           array_agg(jsonb_build_object('status', n.status, 'subscription', n.subscription_id, 'event', n.event_id)
                     ORDER BY n.id)
    INTO ids, befores, afters
    FROM new_deliveries n JOIN old_deliveries o ON o.id = n.id
    WHERE n.status = 'PENDING' AND o.status <> 'PENDING';
    IF ids IS NOT NULL THEN
        PERFORM audit_record_many('webhook.redelivered', 'webhook_delivery', ids, befores, afters);
        NOTIFY webhook_delivery;
    END IF;
    RETURN NULL;
END;
$$;

CREATE TRIGGER after_webhook_redelivery
    AFTER UPDATE ON webhook_deliveries
    REFERENCING OLD TABLE AS old_deliveries NEW TABLE AS new_deliveries
    FOR EACH STATEMENT
    EXECUTE FUNCTION trg_after_webhook_redelivery();

-- "Send a test event" from the admin: a webhook.test event queued for that one endpoint only.
CREATE FUNCTION webhook_send_test(subscription uuid) RETURNS uuid
    LANGUAGE plpgsql SECURITY DEFINER SET search_path = public, pg_temp
AS $$
DECLARE
    event record;
BEGIN
    IF NOT EXISTS (SELECT FROM webhook_subscriptions WHERE id = subscription) THEN
        RAISE EXCEPTION 'platform_events: no webhook endpoint %', subscription USING ERRCODE = 'LP004';
    END IF;
    INSERT INTO outbox_events (aggregate_type, aggregate_id, event_type, payload)
    VALUES ('webhook_endpoint', subscription::text, 'webhook.test',
            jsonb_build_object('type', 'webhook.test',
                               'timestamp', to_char(now() AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"'),
                               'data', jsonb_build_object('endpoint', subscription)))
    RETURNING id, seq INTO event;
    INSERT INTO webhook_deliveries (subscription_id, event_id, event_seq, ordering_key)
    VALUES (subscription, event.id, event.seq, 'webhook_endpoint:' || subscription);
    PERFORM audit_record('webhook.test_sent', 'webhook_endpoint', subscription::text, NULL,
                         jsonb_build_object('event', event.id));
    NOTIFY webhook_delivery;
    RETURN event.id;
END;
$$;
