DROP TRIGGER before_event_publication_move ON event_publications;
DROP FUNCTION trg_before_event_publication_move();
DROP FUNCTION event_publications_backfill(timestamptz, timestamptz);
DROP FUNCTION event_stream_stop();
DROP FUNCTION event_stream_start();

CREATE OR REPLACE FUNCTION outbox_event_due_to(event_id uuid, event_type text) RETURNS text
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

CREATE OR REPLACE FUNCTION outbox_append_many(aggregate_type text, aggregate_ids text[], event_type text, datas jsonb[])
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
DROP TABLE event_publications;
DROP TABLE event_stream;
