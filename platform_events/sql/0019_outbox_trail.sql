-- The outbox's tables keep their own rules against the runtime role (issue 32, item 3).
--
-- An attack as the runtime role set 78 due webhook deliveries DELIVERED without sending them, then
-- deleted their 36 events, and inserted or deleted processed_events rows to skip or replay an internal
-- consumer: nothing refused it, nothing audited it. Now each table allows the moves of the code that
-- writes it and refuses the rest:
--
-- * webhook_deliveries: a run's claim (and its renewal or release), the attempt the claiming run
--   records, and staff sending a delivery again (audited, 0010). The trigger's WHEN tells these apart
--   from any other change, which is refused unless the transaction holds the owner's history key
--   (0005), and then audited. No session setting opens it: SET is anyone's.
-- * outbox_events: deleted only through outbox_events_delete_old() (retention; the runtime role's
--   DELETE is revoked, platform_events/db/runtime_role.py), which takes only events nothing still has
--   due and audits each batch; the delete trigger refuses a due event to every role.
-- * outbox_consumers (new): the internal consumer groups and the event types each takes, registered
--   through outbox_consumer_register() by every pass of a consumer and audited. An event of a
--   registered group's type stays until the group has recorded it.
-- * processed_events: a record is written only for a retained event of a type its group is
--   registered for, at the time it is written, and each is audited (event.processed); none is
--   changed; none is deleted while its event is retained (it would replay the event).

-- Deliveries -----------------------------------------------------------------------------------------

-- Runs for a change the WHEN below does not recognise as a routine move.
CREATE FUNCTION trg_before_webhook_delivery_move() RETURNS trigger
    LANGUAGE plpgsql SECURITY DEFINER SET search_path = public, pg_temp
AS $$
DECLARE
    shown text[] := ARRAY['status', 'attempts', 'next_retry_at', 'lease_until', 'http_status',
                          'http_response_body_excerpt', 'latency_ms', 'first_attempt_at', 'last_attempt_at'];
    diff record := audit_diff(
        (SELECT jsonb_object_agg(key, value) FROM jsonb_each(to_jsonb(OLD)) WHERE key = ANY(shown)),
        (SELECT jsonb_object_agg(key, value) FROM jsonb_each(to_jsonb(NEW)) WHERE key = ANY(shown)));
BEGIN
    IF NOT history_rewrite_allowed() THEN
        RAISE EXCEPTION 'platform_events: delivery % cannot be changed so (%): only its claim, the attempt the claiming run records, or sending it again may change it',
            OLD.id, coalesce((SELECT string_agg(field, ', ' ORDER BY field) FROM jsonb_object_keys(diff.diff_after) field),
                             'its claim')
            USING ERRCODE = 'LP003';
    END IF;
    PERFORM audit_record('webhook.delivery_rewritten', 'webhook_delivery', OLD.id::text, diff.diff_before,
                         diff.diff_after);
    RETURN NEW;
END;
$$;

-- The routine moves, evaluated by the executor (no PL/pgSQL on the dispatcher's path):
-- * its claim: nothing but claim and lease_until changes; a lease is taken only on a delivery still to
--   send and for at most an hour (WEBHOOKS_LEASE_SECONDS' limit), or given back (both NULL);
-- * an attempt: by a run that holds the claim, which it gives back; one more attempt, made now; a
--   delivery still to send becomes DELIVERED (a 2xx answer), FAILED (due again within a week, the
--   longest WEBHOOKS_RETRY_SCHEDULE step) or PERMANENTLY_FAILED;
-- * sent again: back to PENDING, due by this statement, unclaimed, its last attempt kept (audited by
--   after_webhook_redelivery).
CREATE TRIGGER before_webhook_delivery_move
    BEFORE UPDATE ON webhook_deliveries
    FOR EACH ROW
    -- A comparison with NULL (no HTTP status, say) is no routine move: coalesce makes it false.
    WHEN (NOT coalesce(
        -- Its claim.
        ((NEW.status, NEW.attempts, NEW.next_retry_at, NEW.http_status, NEW.http_response_body_excerpt,
          NEW.latency_ms, NEW.first_attempt_at, NEW.last_attempt_at)
         IS NOT DISTINCT FROM
         (OLD.status, OLD.attempts, OLD.next_retry_at, OLD.http_status, OLD.http_response_body_excerpt,
          OLD.latency_ms, OLD.first_attempt_at, OLD.last_attempt_at)
         AND ((NEW.claim, NEW.lease_until) IS NOT DISTINCT FROM (OLD.claim, OLD.lease_until)
              OR NEW.lease_until IS NULL
              OR (OLD.status IN ('PENDING', 'FAILED') AND NEW.lease_until <= now() + interval '1 hour')))
        -- An attempt.
        OR (OLD.claim IS NOT NULL AND NEW.claim IS NULL AND OLD.status IN ('PENDING', 'FAILED')
            AND NEW.attempts = OLD.attempts + 1 AND NEW.last_attempt_at = now()
            AND NEW.first_attempt_at = coalesce(OLD.first_attempt_at, now())
            AND ((NEW.status = 'DELIVERED' AND NEW.http_status BETWEEN 200 AND 299
                  AND NEW.next_retry_at = OLD.next_retry_at)
                 OR (NEW.status = 'FAILED' AND NEW.next_retry_at BETWEEN now() AND now() + interval '7 days')
                 OR (NEW.status = 'PERMANENTLY_FAILED' AND NEW.next_retry_at = OLD.next_retry_at)))
        -- Sent again.
        OR (NEW.status = 'PENDING' AND OLD.status <> 'PENDING' AND NEW.claim IS NULL
            AND NEW.next_retry_at <= statement_timestamp()
            AND (NEW.attempts, NEW.http_status, NEW.http_response_body_excerpt, NEW.latency_ms,
                 NEW.first_attempt_at, NEW.last_attempt_at)
                IS NOT DISTINCT FROM
                (OLD.attempts, OLD.http_status, OLD.http_response_body_excerpt, OLD.latency_ms,
                 OLD.first_attempt_at, OLD.last_attempt_at)), false))
    EXECUTE FUNCTION trg_before_webhook_delivery_move();

-- Consumers ------------------------------------------------------------------------------------------

CREATE TABLE outbox_consumers (
    consumer_group varchar(64) PRIMARY KEY,
    event_types    text[]      NOT NULL CHECK (cardinality(event_types) > 0),
    registered_at  timestamptz NOT NULL DEFAULT now(),
    updated_at     timestamptz NOT NULL DEFAULT now()
);

-- A consumer's pass registers its group and types (platform_events/outbox/consumers.py): a new group,
-- or new types, is written (and audited); the same again writes nothing. Run as the owner: the
-- runtime role may read the table, not change it.
CREATE FUNCTION outbox_consumer_register(consumer_group text, event_types text[]) RETURNS void
    LANGUAGE plpgsql SECURITY DEFINER SET search_path = public, pg_temp
AS $$
DECLARE
    types text[] := (SELECT array_agg(DISTINCT t ORDER BY t) FROM unnest(event_types) t WHERE t IS NOT NULL);
BEGIN
    IF consumer_group IS NULL OR length(consumer_group) NOT BETWEEN 1 AND 64 OR types IS NULL THEN
        RAISE EXCEPTION 'platform_events: a consumer group is 1 to 64 characters and takes at least one event type'
            USING ERRCODE = 'LP004';
    END IF;
    INSERT INTO outbox_consumers AS c (consumer_group, event_types)
    VALUES (outbox_consumer_register.consumer_group, types)
    ON CONFLICT ON CONSTRAINT outbox_consumers_pkey DO UPDATE SET event_types = EXCLUDED.event_types, updated_at = now()
    WHERE c.event_types IS DISTINCT FROM EXCLUDED.event_types;
END;
$$;

CREATE FUNCTION trg_after_outbox_consumer_audit() RETURNS trigger
    LANGUAGE plpgsql SECURITY DEFINER SET search_path = public, pg_temp
AS $$
BEGIN
    IF TG_OP = 'INSERT' THEN
        PERFORM audit_record('consumer.registered', 'outbox_consumer', NEW.consumer_group, NULL,
                             jsonb_build_object('event_types', NEW.event_types));
    ELSIF TG_OP = 'DELETE' THEN
        PERFORM audit_record('consumer.removed', 'outbox_consumer', OLD.consumer_group,
                             jsonb_build_object('event_types', OLD.event_types), NULL);
    ELSIF NEW IS DISTINCT FROM OLD THEN
        PERFORM audit_record('consumer.changed', 'outbox_consumer', NEW.consumer_group,
                             jsonb_build_object('consumer_group', OLD.consumer_group, 'event_types', OLD.event_types),
                             jsonb_build_object('consumer_group', NEW.consumer_group, 'event_types', NEW.event_types));
    END IF;
    RETURN NULL;
END;
$$;

CREATE TRIGGER after_outbox_consumer_audit
    AFTER INSERT OR UPDATE OR DELETE ON outbox_consumers
    FOR EACH ROW
    EXECUTE FUNCTION trg_after_outbox_consumer_audit();

-- The one consumer group released so far (accounts/nodes/consumer.py), registered here: during a
-- deploy the code before this file, which does not register, keeps recording its events.
SELECT outbox_consumer_register('node-assignments', '{account.deleted,account.password_changed}');

-- Events ---------------------------------------------------------------------------------------------

-- Who still has an event due: an endpoint (a delivery still to send) or a registered consumer group
-- that takes its type and has not recorded it; NULL when nothing. The one place that says it: the
-- delete trigger and retention both ask here.
CREATE FUNCTION outbox_event_due_to(event_id uuid, event_type text) RETURNS text
    LANGUAGE sql STABLE SET search_path = public, pg_temp
AS $$
    SELECT coalesce(
        (SELECT 'an endpoint' FROM webhook_deliveries d
         WHERE d.event_id = outbox_event_due_to.event_id AND d.status IN ('PENDING', 'FAILED') LIMIT 1),
        (SELECT 'consumer group ' || c.consumer_group FROM outbox_consumers c
         WHERE c.event_types @> ARRAY[outbox_event_due_to.event_type]
           AND NOT EXISTS (SELECT FROM processed_events p
                           WHERE p.consumer_group = c.consumer_group AND p.event_id = outbox_event_due_to.event_id)
         ORDER BY c.consumer_group LIMIT 1))
$$;

CREATE OR REPLACE FUNCTION trg_before_outbox_event_delete() RETURNS trigger
    LANGUAGE plpgsql SET search_path = public, pg_temp
AS $$
DECLARE
    due_to text := outbox_event_due_to(OLD.id, OLD.event_type);
BEGIN
    IF due_to IS NOT NULL THEN
        RAISE EXCEPTION 'platform_events: event % is still due to %; it cannot be deleted', OLD.id, due_to
            USING ERRCODE = 'LP003';
    END IF;
    RETURN OLD;
END;
$$;

-- Retention's one way to delete events (platform_events/retention.py): up to ``size`` events older
-- than ``days`` days (at least 1, as RETENTION_EVENT_DAYS) that nothing has due, with their finished
-- deliveries; rows another session holds are skipped. Each batch is audited (event.retention_deleted,
-- how many and which seqs). Returns how many it deleted.
CREATE FUNCTION outbox_events_delete_old(days int, size int) RETURNS int
    LANGUAGE plpgsql SECURITY DEFINER SET search_path = public, pg_temp
AS $$
DECLARE
    cutoff timestamptz;
    deleted int;
    first_seq bigint;
    last_seq bigint;
BEGIN
    IF days IS NULL OR days < 1 OR size IS NULL OR size < 1 THEN
        RAISE EXCEPTION 'platform_events: events are kept at least 1 day, deleted at least 1 at a time'
            USING ERRCODE = 'LP004';
    END IF;
    cutoff := now() - make_interval(days => days);
    WITH old AS (
        SELECT e.id FROM outbox_events e
        WHERE e.created_at < cutoff AND outbox_event_due_to(e.id, e.event_type) IS NULL
        LIMIT size
        FOR UPDATE SKIP LOCKED
    ), gone AS (
        DELETE FROM outbox_events e USING old WHERE e.id = old.id RETURNING e.seq
    )
    SELECT count(*), min(seq), max(seq) INTO deleted, first_seq, last_seq FROM gone;
    IF deleted > 0 THEN
        PERFORM audit_record('event.retention_deleted', 'outbox', 'events', NULL,
                             jsonb_build_object('deleted', deleted, 'created_before', cutoff,
                                                'first_seq', first_seq, 'last_seq', last_seq));
    END IF;
    RETURN deleted;
END;
$$;

-- What retention would delete now (its --dry-run).
CREATE FUNCTION outbox_events_old_count(days int) RETURNS bigint
    LANGUAGE sql STABLE SET search_path = public, pg_temp
AS $$
    SELECT count(*) FROM outbox_events e
    WHERE e.created_at < now() - make_interval(days => days) AND outbox_event_due_to(e.id, e.event_type) IS NULL
$$;

-- Processed events -----------------------------------------------------------------------------------

-- Each record, once per statement: only of a retained event its group is registered to take, written
-- now (a record dated earlier would misplace the consumer's position), and audited with the actor the
-- context names. The owner's history key lets a test or the demo date a record, still audited.
CREATE FUNCTION trg_after_processed_event_insert() RETURNS trigger
    LANGUAGE plpgsql SECURITY DEFINER SET search_path = public, pg_temp
AS $$
DECLARE
    bad record;
BEGIN
    SELECT n.consumer_group, n.event_id,
           CASE WHEN e.id IS NULL THEN 'no such event is kept'
                WHEN c.consumer_group IS NULL THEN 'no consumer group of that name takes events of type ' || e.event_type
                ELSE 'a record is written at the time it is made' END AS why
    INTO bad
    FROM new_records n
    LEFT JOIN outbox_events e ON e.id = n.event_id
    LEFT JOIN outbox_consumers c ON c.consumer_group = n.consumer_group AND c.event_types @> ARRAY[e.event_type::text]
    WHERE e.id IS NULL OR c.consumer_group IS NULL OR (n.processed_at <> now() AND NOT history_rewrite_allowed())
    LIMIT 1;
    IF FOUND THEN
        RAISE EXCEPTION 'platform_events: % cannot record event %: %', bad.consumer_group, bad.event_id, bad.why
            USING ERRCODE = 'LP003';
    END IF;
    PERFORM audit_record_many('event.processed', 'outbox_event', array_agg(n.event_id::text ORDER BY n.event_id),
                              NULL,
                              array_agg(jsonb_build_object('consumer_group', n.consumer_group) ORDER BY n.event_id))
    FROM new_records n;
    RETURN NULL;
END;
$$;

CREATE TRIGGER after_processed_event_insert
    AFTER INSERT ON processed_events
    REFERENCING NEW TABLE AS new_records
    FOR EACH STATEMENT
    EXECUTE FUNCTION trg_after_processed_event_insert();

-- A record outlives nothing it guards: deleted while its event is kept, the consumer would handle the
-- event again. Retention deletes the records of events already gone.
CREATE FUNCTION trg_after_processed_event_delete() RETURNS trigger
    LANGUAGE plpgsql SET search_path = public, pg_temp
AS $$
DECLARE
    kept record;
BEGIN
    SELECT o.consumer_group, o.event_id INTO kept
    FROM old_records o WHERE EXISTS (SELECT FROM outbox_events e WHERE e.id = o.event_id) LIMIT 1;
    IF FOUND THEN
        RAISE EXCEPTION 'platform_events: the record that % processed event % cannot be deleted while the event is kept',
            kept.consumer_group, kept.event_id
            USING ERRCODE = 'LP003';
    END IF;
    RETURN NULL;
END;
$$;

CREATE TRIGGER after_processed_event_delete
    AFTER DELETE ON processed_events
    REFERENCING OLD TABLE AS old_records
    FOR EACH STATEMENT
    EXECUTE FUNCTION trg_after_processed_event_delete();

CREATE FUNCTION trg_before_processed_event_update() RETURNS trigger
    LANGUAGE plpgsql SET search_path = public, pg_temp
AS $$
BEGIN
    RAISE EXCEPTION 'platform_events: a consumer''s record of an event cannot be changed' USING ERRCODE = 'LP003';
END;
$$;

CREATE TRIGGER before_processed_event_update
    BEFORE UPDATE ON processed_events
    FOR EACH ROW
    EXECUTE FUNCTION trg_before_processed_event_update();
