-- The function of 0001, SECURITY DEFINER since 0004 (CREATE OR REPLACE drops the SET clauses it
-- does not repeat: lock_timeout goes, search_path stays).
CREATE OR REPLACE FUNCTION audit_ensure_partition(month date) RETURNS boolean
    LANGUAGE plpgsql SECURITY DEFINER SET search_path = public, pg_temp
AS $$
DECLARE
    lower_bound date := date_trunc('month', month)::date;
    upper_bound date := (date_trunc('month', month) + interval '1 month')::date;
    name text := format('audit_events_%s', to_char(lower_bound, 'YYYY_MM'));
BEGIN
    IF to_regclass(name) IS NOT NULL THEN
        RETURN false;
    END IF;
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
