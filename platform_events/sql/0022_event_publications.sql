-- Events to a Kafka-protocol broker (docs/kafka.md): the publication state of each event, beside it.
--
-- * event_stream: one row while the relay publishes (written by event_stream_start(), removed by
--   event_stream_stop(), both audited). Without it no publication row is made: with
--   KAFKA_BOOTSTRAP_SERVERS unset nothing waits on a relay.
-- * event_publications: one row per event to publish, made by outbox_append_many() in the statement
--   that appends the event (so it commits with it, and a late commit is published when it commits),
--   or for a past period by event_publications_backfill(). PENDING until the relay marks it PUBLISHED
--   with the broker's acknowledgement (partition, offset). It carries the event's seq and ordering key,
--   so that an account's later event is not due while an earlier one is PENDING.
-- * outbox_event_due_to() names the relay for a PENDING event: retention keeps it.
-- * The runtime role neither inserts nor deletes publication rows (platform_events/db/runtime_role.py);
--   of updates, only the relay's routine moves pass (the trigger's WHEN below), the rest is refused
--   unless the transaction holds the owner's history key, and then audited.

CREATE TABLE event_stream (
    only_row   boolean     PRIMARY KEY DEFAULT true CHECK (only_row),
    started_at timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE event_publications (
    event_id        uuid         PRIMARY KEY REFERENCES outbox_events (id) ON DELETE CASCADE,
    event_seq       bigint       NOT NULL,
    ordering_key    varchar(140) NOT NULL,  -- aggregate_type:aggregate_id
    status          varchar(16)  NOT NULL DEFAULT 'PENDING',
    attempts        int          NOT NULL DEFAULT 0,  -- attempts the broker refused
    next_attempt_at timestamptz  NOT NULL DEFAULT now(),
    lease_until     timestamptz,
    claim           uuid,
    last_error      varchar(1024),
    published_at    timestamptz,
    kafka_partition int,
    kafka_offset    bigint,
    created_at      timestamptz  NOT NULL DEFAULT now(),

    CONSTRAINT ck_event_publications_status CHECK (status IN ('PENDING', 'PUBLISHED')),
    CONSTRAINT ck_event_publications_claim CHECK ((lease_until IS NULL) = (claim IS NULL)),
    CONSTRAINT ck_event_publications_published CHECK (
        (status = 'PUBLISHED') = (published_at IS NOT NULL)
        AND (published_at IS NULL) = (kafka_partition IS NULL)
        AND (published_at IS NULL) = (kafka_offset IS NULL))
);
-- What is due, oldest event first: only the PENDING rows, so the claim costs what waits, not what is kept.
CREATE INDEX event_publications_due ON event_publications (event_seq) WHERE status = 'PENDING';
-- An account's earlier unpublished event holds its later ones back.
CREATE INDEX event_publications_order ON event_publications (ordering_key, event_seq) WHERE status = 'PENDING';

-- The outbox's append, as 0010 wrote it, with the publication rows while the stream is on.
CREATE OR REPLACE FUNCTION outbox_append_many(aggregate_type text, aggregate_ids text[], event_type text, datas jsonb[])
    RETURNS void
    LANGUAGE plpgsql SECURITY DEFINER SET search_path = public, pg_temp
AS $$
DECLARE
    queued bigint;
    published bigint;
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
    ), published_rows AS (
        INSERT INTO event_publications (event_id, event_seq, ordering_key)
        SELECT a.id, a.seq, a.aggregate_type || ':' || a.aggregate_id
        FROM appended a
        WHERE EXISTS (SELECT FROM event_stream)
        RETURNING 1
    )
    SELECT (SELECT count(*) FROM queued_rows), (SELECT count(*) FROM published_rows) INTO queued, published;
    IF queued > 0 THEN
        -- Once per transaction, whatever the number of statements (PostgreSQL folds equal notifications).
        NOTIFY webhook_delivery;
    END IF;
    IF published > 0 THEN
        NOTIFY event_publication;
    END IF;
END;
$$;
REVOKE EXECUTE ON FUNCTION outbox_append_many(text, text[], text, jsonb[]) FROM PUBLIC;

-- Still due: to an endpoint, to the Kafka relay, or to a registered consumer group.
CREATE OR REPLACE FUNCTION outbox_event_due_to(event_id uuid, event_type text) RETURNS text
    LANGUAGE sql STABLE SET search_path = public, pg_temp
AS $$
    SELECT coalesce(
        (SELECT 'an endpoint' FROM webhook_deliveries d
         WHERE d.event_id = outbox_event_due_to.event_id AND d.status IN ('PENDING', 'FAILED') LIMIT 1),
        (SELECT 'the Kafka relay' FROM event_publications p
         WHERE p.event_id = outbox_event_due_to.event_id AND p.status = 'PENDING'),
        (SELECT 'consumer group ' || c.consumer_group FROM outbox_consumers c
         WHERE c.event_types @> ARRAY[outbox_event_due_to.event_type]
           AND NOT EXISTS (SELECT FROM processed_events p
                           WHERE p.consumer_group = c.consumer_group AND p.event_id = outbox_event_due_to.event_id)
         ORDER BY c.consumer_group LIMIT 1))
$$;

-- The relay's start: from now on every appended event gets a publication row. Audited once, when it
-- switches the stream on; again and again after that it changes nothing. Returns when it started.
CREATE FUNCTION event_stream_start() RETURNS timestamptz
    LANGUAGE plpgsql SECURITY DEFINER SET search_path = public, pg_temp
AS $$
DECLARE
    started timestamptz;
BEGIN
    INSERT INTO event_stream DEFAULT VALUES ON CONFLICT DO NOTHING RETURNING started_at INTO started;
    IF started IS NOT NULL THEN
        PERFORM audit_record('event.stream_started', 'event_stream', 'kafka', NULL,
                             jsonb_build_object('started_at', started));
        RETURN started;
    END IF;
    RETURN (SELECT started_at FROM event_stream);
END;
$$;

-- Off for good (KAFKA_BOOTSTRAP_SERVERS removed): no more rows, and the unpublished ones dropped so
-- that retention no longer keeps their events. Audited with how many were dropped. Returns that count.
CREATE FUNCTION event_stream_stop() RETURNS bigint
    LANGUAGE plpgsql SECURITY DEFINER SET search_path = public, pg_temp
AS $$
DECLARE
    dropped bigint;
BEGIN
    DELETE FROM event_stream;
    IF NOT FOUND THEN
        RETURN 0;
    END IF;
    WITH gone AS (DELETE FROM event_publications WHERE status = 'PENDING' RETURNING 1)
    SELECT count(*) INTO dropped FROM gone;
    PERFORM audit_record('event.stream_stopped', 'event_stream', 'kafka', NULL,
                         jsonb_build_object('unpublished_dropped', dropped));
    RETURN dropped;
END;
$$;

-- Publish the kept events written in [since, until) that have no publication row (events from before
-- the stream started, or from a time it was off); staff's test events are not published. Audited with
-- the period and the count. Returns the count.
CREATE FUNCTION event_publications_backfill(since timestamptz, until timestamptz) RETURNS bigint
    LANGUAGE plpgsql SECURITY DEFINER SET search_path = public, pg_temp
AS $$
DECLARE
    made bigint;
BEGIN
    IF NOT EXISTS (SELECT FROM event_stream) THEN
        RAISE EXCEPTION 'platform_events: the event stream is off; start the relay before publishing a period'
            USING ERRCODE = 'LP004';
    END IF;
    IF since IS NULL OR until IS NULL OR since >= until THEN
        RAISE EXCEPTION 'platform_events: a period to publish starts before it ends' USING ERRCODE = 'LP004';
    END IF;
    WITH made_rows AS (
        INSERT INTO event_publications (event_id, event_seq, ordering_key)
        SELECT e.id, e.seq, e.aggregate_type || ':' || e.aggregate_id
        FROM outbox_events e
        WHERE e.created_at >= since AND e.created_at < until AND e.event_type <> 'webhook.test'
        ORDER BY e.seq
        ON CONFLICT (event_id) DO NOTHING
        RETURNING 1
    )
    SELECT count(*) INTO made FROM made_rows;
    PERFORM audit_record('event.publication_backfilled', 'event_stream', 'kafka', NULL,
                         jsonb_build_object('since', since, 'until', until, 'events', made));
    IF made > 0 THEN
        NOTIFY event_publication;
    END IF;
    RETURN made;
END;
$$;

-- Runs for a change the WHEN below does not recognise as one of the relay's moves.
CREATE FUNCTION trg_before_event_publication_move() RETURNS trigger
    LANGUAGE plpgsql SECURITY DEFINER SET search_path = public, pg_temp
AS $$
DECLARE
    shown text[] := ARRAY['status', 'attempts', 'next_attempt_at', 'lease_until', 'last_error', 'published_at',
                          'kafka_partition', 'kafka_offset'];
    diff record := audit_diff(
        (SELECT jsonb_object_agg(key, value) FROM jsonb_each(to_jsonb(OLD)) WHERE key = ANY(shown)),
        (SELECT jsonb_object_agg(key, value) FROM jsonb_each(to_jsonb(NEW)) WHERE key = ANY(shown)));
BEGIN
    IF NOT history_rewrite_allowed() THEN
        RAISE EXCEPTION 'platform_events: the publication of event % cannot be changed so (%): only its claim, or the attempt the claiming relay records, may change it',
            OLD.event_id, coalesce((SELECT string_agg(field, ', ' ORDER BY field) FROM jsonb_object_keys(diff.diff_after) field),
                                   'its claim')
            USING ERRCODE = 'LP003';
    END IF;
    PERFORM audit_record('event.publication_rewritten', 'event_publication', OLD.event_id::text, diff.diff_before,
                         diff.diff_after);
    RETURN NEW;
END;
$$;

-- The relay's moves, evaluated by the executor (no PL/pgSQL on its path):
-- * its claim: only claim and lease_until change; a lease is taken only on a PENDING row and for at
--   most an hour, or given back (both NULL);
-- * published: by the run that holds the claim, which it gives back; PENDING becomes PUBLISHED now,
--   with the broker's partition and offset, nothing else changed;
-- * refused: by the run that holds the claim, which it gives back; still PENDING, one more attempt,
--   due again within a day, with the broker's error.
CREATE TRIGGER before_event_publication_move
    BEFORE UPDATE ON event_publications
    FOR EACH ROW
    WHEN (NOT coalesce(
        -- Its claim.
        ((NEW.event_id, NEW.event_seq, NEW.ordering_key, NEW.status, NEW.attempts, NEW.next_attempt_at,
          NEW.last_error, NEW.published_at, NEW.kafka_partition, NEW.kafka_offset, NEW.created_at)
         IS NOT DISTINCT FROM
         (OLD.event_id, OLD.event_seq, OLD.ordering_key, OLD.status, OLD.attempts, OLD.next_attempt_at,
          OLD.last_error, OLD.published_at, OLD.kafka_partition, OLD.kafka_offset, OLD.created_at)
         AND ((NEW.claim, NEW.lease_until) IS NOT DISTINCT FROM (OLD.claim, OLD.lease_until)
              OR NEW.lease_until IS NULL
              OR (OLD.status = 'PENDING' AND NEW.lease_until <= now() + interval '1 hour')))
        -- Published, or refused, by the claim's holder.
        OR (OLD.claim IS NOT NULL AND NEW.claim IS NULL AND OLD.status = 'PENDING'
            AND (NEW.event_id, NEW.event_seq, NEW.ordering_key, NEW.created_at)
                = (OLD.event_id, OLD.event_seq, OLD.ordering_key, OLD.created_at)
            AND ((NEW.status = 'PUBLISHED' AND NEW.published_at = now()
                  AND NEW.kafka_partition >= 0 AND NEW.kafka_offset >= 0
                  AND (NEW.attempts, NEW.next_attempt_at) = (OLD.attempts, OLD.next_attempt_at)
                  AND NEW.last_error IS NOT DISTINCT FROM OLD.last_error)
                 OR (NEW.status = 'PENDING' AND NEW.attempts = OLD.attempts + 1
                     AND NEW.next_attempt_at BETWEEN now() AND now() + interval '1 day'
                     AND NEW.last_error IS NOT NULL))), false))
    EXECUTE FUNCTION trg_before_event_publication_move();
