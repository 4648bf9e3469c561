-- The dashboard's sign-ups and activations per day (accounts/daily_counts.py), counted once a day is
-- over instead of on every page: the 30 days of a million accounts made a year are 80,000 sign-ups
-- counted twice per page, 60 ms (bench/admin.py). A day is one of the site's time zone, named in the
-- row: another zone's rows are not read. No identifying data; kept 30 days (manage.py cleanup).
CREATE TABLE account_daily_counts (
    id          bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    zone        text NOT NULL,
    day         date NOT NULL,
    signups     integer NOT NULL CHECK (signups >= 0),
    activations integer NOT NULL CHECK (activations >= 0),
    counted_at  timestamptz NOT NULL DEFAULT now(),
    UNIQUE (zone, day)
);
