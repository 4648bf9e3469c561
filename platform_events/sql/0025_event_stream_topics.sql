-- The topics the stream publishes to, recorded with the stream (docs/kafka.md, "On and off"): a
-- relay started with another KAFKA_TOPIC_PREFIX (a staging configuration, a rename done on one host)
-- would otherwise take its share of the same events to other topics, and each topic would miss some
-- of an account's events. The relay starts the stream with its prefix; a relay with another one is
-- refused. Moving the stream to other topics is a deliberate, audited step.
ALTER TABLE event_stream ADD COLUMN topic_prefix varchar(200);

-- Switch publication on for topics named with ``prefix``, or join the stream already on: audited when
-- it starts, or when a stream started without a prefix records its first. Returns when it started.
CREATE FUNCTION event_stream_start(prefix text) RETURNS timestamptz
    LANGUAGE plpgsql SECURITY DEFINER SET search_path = public, pg_temp
AS $$
DECLARE
    started timestamptz;
    recorded text;
BEGIN
    IF prefix IS NULL THEN
        RAISE EXCEPTION 'platform_events: a stream publishes to topics named with a prefix' USING ERRCODE = 'LP004';
    END IF;
    INSERT INTO event_stream (topic_prefix) VALUES (prefix) ON CONFLICT DO NOTHING RETURNING started_at INTO started;
    IF started IS NOT NULL THEN
        PERFORM audit_record('event.stream_started', 'event_stream', 'kafka', NULL,
                             jsonb_build_object('started_at', started, 'topic_prefix', prefix));
        RETURN started;
    END IF;
    UPDATE event_stream SET topic_prefix = prefix WHERE topic_prefix IS NULL;
    IF FOUND THEN
        PERFORM audit_record('event.stream_topics_moved', 'event_stream', 'kafka',
                             jsonb_build_object('topic_prefix', NULL), jsonb_build_object('topic_prefix', prefix));
    END IF;
    SELECT started_at, topic_prefix INTO started, recorded FROM event_stream;
    IF recorded <> prefix THEN
        RAISE EXCEPTION 'platform_events: the event stream publishes to topics prefixed %, not %: set KAFKA_TOPIC_PREFIX=% here, or move the stream with manage.py publish_events --move-topics once every relay is stopped',
            quote_literal(recorded), quote_literal(prefix), recorded
            USING ERRCODE = 'LP004';
    END IF;
    RETURN started;
END;
$$;

-- Move the stream to topics named with ``prefix`` (run with every relay stopped): events not yet
-- published go to the new topics, those published stay where they are. Audited with before and after.
-- Returns the prefix it had.
CREATE FUNCTION event_stream_move_topics(prefix text) RETURNS text
    LANGUAGE plpgsql SECURITY DEFINER SET search_path = public, pg_temp
AS $$
DECLARE
    before text;
BEGIN
    IF NOT EXISTS (SELECT FROM event_stream) THEN
        RAISE EXCEPTION 'platform_events: the event stream is off; start the relay instead' USING ERRCODE = 'LP004';
    END IF;
    IF prefix IS NULL THEN
        RAISE EXCEPTION 'platform_events: a stream publishes to topics named with a prefix' USING ERRCODE = 'LP004';
    END IF;
    SELECT topic_prefix INTO before FROM event_stream FOR UPDATE;
    IF before IS DISTINCT FROM prefix THEN
        UPDATE event_stream SET topic_prefix = prefix;
        PERFORM audit_record('event.stream_topics_moved', 'event_stream', 'kafka',
                             jsonb_build_object('topic_prefix', before), jsonb_build_object('topic_prefix', prefix));
    END IF;
    RETURN before;
END;
$$;
