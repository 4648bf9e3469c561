-- Partition upkeep never fails a concurrent write (issue 9).
--
-- Before: the partition of a month was made (its rows moved out of the default partition, then
-- ATTACH) while writers kept inserting. ATTACH locks the parent only in SHARE UPDATE EXCLUSIVE mode,
-- which writers pass: a writer that had routed its row by the partitions it knew before reached the
-- default partition after the attach, whose constraint now excluded the month, and failed ("new row
-- for relation audit_events_default violates partition constraint", inside an audit trigger: the
-- whole sign-up rolled back). Every fresh install went through it, the first time the worker made
-- this month's partition.
--
-- Now the function locks audit_events against writers (SHARE ROW EXCLUSIVE: readers go on) before
-- it looks again and makes the partition. A writer waits for that lock, then routes its row by the
-- new partitions. It waits at most lock_timeout (5 s) while the function queues behind a longer
-- transaction that has written audit rows (then the function gives up, LockNotAvailable, and changes
-- nothing), plus the making itself: milliseconds when the default partition holds none of the
-- month's rows, which is the normal case now that migrate and the daily schedule make the months
-- ahead (platform_events/partitions.py). README, "Audit trail", says the same.
CREATE OR REPLACE FUNCTION audit_ensure_partition(month date) RETURNS boolean
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path = public, pg_temp
    SET lock_timeout = '5s'
AS $$
DECLARE
    lower_bound date := date_trunc('month', month)::date;
    upper_bound date := (date_trunc('month', month) + interval '1 month')::date;
    name text := format('audit_events_%s', to_char(lower_bound, 'YYYY_MM'));
BEGIN
    IF to_regclass(name) IS NOT NULL THEN
        RETURN false;
    END IF;
    LOCK TABLE audit_events IN SHARE ROW EXCLUSIVE MODE;
    IF to_regclass(name) IS NOT NULL THEN  -- made by another session while this one waited
        RETURN false;
    END IF;
    IF NOT EXISTS (SELECT FROM audit_events_default WHERE occurred_at >= lower_bound AND occurred_at < upper_bound) THEN
        EXECUTE format('CREATE TABLE %I PARTITION OF audit_events FOR VALUES FROM (%L) TO (%L)',
                       name, lower_bound, upper_bound);
        RETURN true;
    END IF;
    -- The month's rows wait in the default partition: moved out first (ATTACH would refuse otherwise).
    EXECUTE format('CREATE TABLE %I (LIKE audit_events INCLUDING DEFAULTS INCLUDING CONSTRAINTS)', name);
    -- Moving rows is the one deletion audit rows allow.
    ALTER TABLE audit_events_default DISABLE TRIGGER audit_events_append_only;
    EXECUTE format(
        'WITH moved AS (DELETE FROM audit_events_default WHERE occurred_at >= %L AND occurred_at < %L RETURNING *)'
        ' INSERT INTO %I SELECT * FROM moved', lower_bound, upper_bound, name);
    ALTER TABLE audit_events_default ENABLE TRIGGER audit_events_append_only;
    EXECUTE format('ALTER TABLE audit_events ATTACH PARTITION %I FOR VALUES FROM (%L) TO (%L)',
                   name, lower_bound, upper_bound);
    RETURN true;
END;
$$;
