-- The public pages' limits (issue 10): hits per bucket and fixed window, shared by every process and
-- host (no Redis in this product). A bucket is "<limit>:<keyed hash of the key>": the table never
-- holds an address, a login or an IP.

CREATE TABLE rate_limits (
    id           bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    bucket       text        NOT NULL CHECK (length(bucket) <= 200),
    window_start timestamptz NOT NULL,
    window_end   timestamptz NOT NULL CHECK (window_end > window_start),
    hits         integer     NOT NULL CHECK (hits > 0),
    CONSTRAINT rate_limits_bucket_window_key UNIQUE (bucket, window_start)
);

-- The retention rule (manage.py cleanup) deletes windows long ended.
CREATE INDEX rate_limits_window_end_idx ON rate_limits (window_end);

-- Counts one hit in each bucket's current window, in one statement (concurrent hits from any number
-- of sessions are all counted: the upsert takes the row's lock), in bucket order (two callers of the
-- same buckets lock them in one order, so they never deadlock). Returns each bucket's count and when
-- its window ends.
CREATE FUNCTION rate_limits_hit(buckets text[], window_seconds integer[])
    RETURNS TABLE (bucket text, hits integer, window_end timestamptz)
    LANGUAGE sql
    SET search_path = public, pg_temp
AS $$
    INSERT INTO rate_limits AS r (bucket, window_start, window_end, hits)
    SELECT b.bucket, w.start, w.start + make_interval(secs => b.seconds), 1
    FROM unnest(buckets, window_seconds) AS b(bucket, seconds),
         -- Windows aligned on the epoch, so every process agrees where one starts.
         LATERAL (SELECT to_timestamp(floor(extract(epoch FROM now()) / b.seconds) * b.seconds) AS start) w
    ORDER BY b.bucket
    ON CONFLICT (bucket, window_start) DO UPDATE SET hits = r.hits + 1
    RETURNING r.bucket, r.hits, r.window_end
$$;
