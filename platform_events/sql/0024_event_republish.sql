-- Publishing a period again, after a broker lost what it had acknowledged (a topic deleted and made
-- again, a cluster restored from nothing): the events written in [since, until) are published again
-- from their first, whatever their state. Their PUBLISHED rows are replaced by PENDING ones with the
-- same seqs, so each account's events go out again in order, held back as always, with their own
-- ids (consumers that kept them drop the repeats). Audited once, with the period and the counts.
CREATE FUNCTION event_publications_republish(since timestamptz, until timestamptz) RETURNS bigint
    LANGUAGE plpgsql SECURITY DEFINER SET search_path = public, pg_temp
AS $$
DECLARE
    replaced bigint;
    made bigint;
BEGIN
    IF NOT EXISTS (SELECT FROM event_stream) THEN
        RAISE EXCEPTION 'platform_events: the event stream is off; start the relay before publishing a period'
            USING ERRCODE = 'LP004';
    END IF;
    IF since IS NULL OR until IS NULL OR since >= until THEN
        RAISE EXCEPTION 'platform_events: a period to publish starts before it ends' USING ERRCODE = 'LP004';
    END IF;
    WITH gone AS (
        DELETE FROM event_publications p USING outbox_events e
        WHERE p.event_id = e.id AND p.status = 'PUBLISHED' AND e.created_at >= since AND e.created_at < until
        RETURNING 1
    )
    SELECT count(*) INTO replaced FROM gone;
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
    PERFORM audit_record('event.publication_republished', 'event_stream', 'kafka', NULL,
                         jsonb_build_object('since', since, 'until', until, 'events', made,
                                            'published_before', replaced));
    IF made > 0 THEN
        NOTIFY event_publication;
    END IF;
    RETURN made;
END;
$$;
