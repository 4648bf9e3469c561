-- Rate limits of the public pages (platform_events/limits.py): PostgreSQL, not Redis, so every
-- process and host counts in one place. One row per bucket and fixed window, counted by one upsert.
CREATE TABLE rate_limits (
    -- Django needs a one-column key; a row is known by (bucket, window_start).
    id           bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    -- The limit's name and a keyed digest of the key: never an e-mail address, login or IP address.
    bucket       text        NOT NULL,
    window_start timestamptz NOT NULL,
    window_end   timestamptz NOT NULL,
    hits         integer     NOT NULL,
    CONSTRAINT rate_limits_bucket_window_key UNIQUE (bucket, window_start),
    -- Holds for every client, psql included: a raw key cannot be a 64-digit hex digest.
    CONSTRAINT ck_rate_limits_bucket CHECK (bucket ~ '^[a-z0-9][a-z0-9._-]*:[0-9a-f]{64}$'),
    CONSTRAINT ck_rate_limits_window CHECK (window_end > window_start),
    CONSTRAINT ck_rate_limits_hits CHECK (hits > 0)
);

-- The retention rule ("limits") deletes the windows that ended more than a day ago.
CREATE INDEX rate_limits_window_end_idx ON rate_limits (window_end);
