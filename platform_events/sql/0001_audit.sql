-- Platform events, part 1 (seed 004, adapted): set_updated_at() and the audit trail.
-- Error messages start with "platform_events:".

-- The shared trigger function for tables with updated_at (seed 004's shared.set_updated_at).
CREATE FUNCTION set_updated_at() RETURNS trigger
    LANGUAGE plpgsql
AS $$
BEGIN
    NEW.updated_at := now();
    RETURN NEW;
END;
$$;

-- Seed 004's platform.audit_events, range-partitioned by month. Differences: the primary key
-- includes occurred_at (PostgreSQL refuses a unique key on a partitioned table without the
-- partition key, so the seed's PRIMARY KEY (id) fails); a default partition, so no row is ever
-- refused when a month has no partition yet; a reason column for the staff's stated reason.
CREATE TABLE audit_events (
    id               uuid        NOT NULL DEFAULT gen_random_uuid(),
    -- clock_timestamp(), not now(): the events of one transaction keep their order.
    occurred_at      timestamptz NOT NULL DEFAULT clock_timestamp(),
    actor_type       varchar(16) NOT NULL,
    actor_id         varchar(64) NOT NULL,
    actor_display    varchar(255),
    actor_ip         inet,
    actor_user_agent text,
    action           varchar(128) NOT NULL,
    resource_type    varchar(64)  NOT NULL,
    resource_id      varchar(64)  NOT NULL,
    result           varchar(16)  NOT NULL DEFAULT 'SUCCESS',
    reason           text,
    correlation_id   uuid,
    request_id       uuid,
    method           varchar(8),
    path             varchar(2048),
    status_code      int,
    diff_before      jsonb,
    diff_after       jsonb,
    -- occurred_at first: inserts append to the index instead of landing at random (uuid) places.
    PRIMARY KEY (occurred_at, id),
    CONSTRAINT ck_audit_actor_type CHECK (actor_type IN ('USER', 'SERVICE', 'SYSTEM')),
    CONSTRAINT ck_audit_result CHECK (result IN ('SUCCESS', 'FAILURE', 'DENIED'))
) PARTITION BY RANGE (occurred_at);

CREATE TABLE audit_events_default PARTITION OF audit_events DEFAULT;

CREATE INDEX audit_events_actor_idx ON audit_events (actor_id, occurred_at DESC);
CREATE INDEX audit_events_resource_idx ON audit_events (resource_type, resource_id, occurred_at DESC);
CREATE INDEX audit_events_action_idx ON audit_events (action, occurred_at DESC);
CREATE INDEX audit_events_correlation_idx ON audit_events (correlation_id) WHERE correlation_id IS NOT NULL;

-- Creates the partition of the month that holds ``month`` unless it exists, moving that month's
-- rows out of the default partition first (ATTACH would refuse otherwise). Returns whether it made one.
CREATE FUNCTION audit_ensure_partition(month date) RETURNS boolean
    LANGUAGE plpgsql
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

-- The acting staff member and the request come in by SET LOCAL lifecycle.* (django-pghistory's
-- technique), so a change made in psql is audited too: actor SYSTEM, the database role.
CREATE FUNCTION audit_setting(name text) RETURNS text
    LANGUAGE sql STABLE
AS $$ SELECT nullif(current_setting('lifecycle.' || name, true), '') $$;

-- Who is acting, for the row being written: the SET LOCAL context, or the database role.
CREATE FUNCTION audit_actor()
    RETURNS TABLE (actor_type varchar, actor_id varchar, actor_display varchar, actor_ip inet,
                   actor_user_agent text, reason text, correlation_id uuid, request_id uuid)
    LANGUAGE sql STABLE
AS $$
    SELECT CASE WHEN audit_setting('actor_id') IS NULL THEN 'SYSTEM' ELSE 'USER' END,
           coalesce(audit_setting('actor_id'), current_user),
           coalesce(audit_setting('actor_display'), current_user),
           audit_setting('actor_ip')::inet,
           audit_setting('actor_user_agent'),
           audit_setting('reason'),
           audit_setting('correlation_id')::uuid,
           audit_setting('request_id')::uuid
$$;

CREATE FUNCTION audit_record(action text, resource_type text, resource_id text, diff_before jsonb, diff_after jsonb)
    RETURNS void
    LANGUAGE sql
AS $$
    INSERT INTO audit_events (actor_type, actor_id, actor_display, actor_ip, actor_user_agent, reason, correlation_id,
                              request_id, action, resource_type, resource_id, diff_before, diff_after)
    SELECT a.*, action, resource_type, resource_id, diff_before, diff_after FROM audit_actor() a
$$;

-- The fields of a row change that differ, as (before, after) objects: only what changed is kept.
CREATE FUNCTION audit_diff(old_row jsonb, new_row jsonb, OUT diff_before jsonb, OUT diff_after jsonb)
    LANGUAGE sql IMMUTABLE
AS $$
    SELECT jsonb_object_agg(key, old_row -> key), jsonb_object_agg(key, value)
    FROM jsonb_each(new_row)
    WHERE value IS DISTINCT FROM old_row -> key
$$;

-- Audit rows are written once and never changed, by any client.
CREATE FUNCTION trg_audit_events_append_only() RETURNS trigger
    LANGUAGE plpgsql
AS $$
BEGIN
    RAISE EXCEPTION 'platform_events: audit events cannot be changed or deleted' USING ERRCODE = 'LP001';
END;
$$;

CREATE TRIGGER audit_events_append_only
    BEFORE UPDATE OR DELETE ON audit_events
    FOR EACH ROW
    EXECUTE FUNCTION trg_audit_events_append_only();

CREATE TRIGGER audit_events_no_truncate
    BEFORE TRUNCATE ON audit_events
    FOR EACH STATEMENT
    EXECUTE FUNCTION trg_audit_events_append_only();
