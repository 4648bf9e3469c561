-- The runtime role writes the audit trail only through the triggers (issue 8; README, "Security").
--
-- The app used to connect as the superuser, so the trail was append-only on paper: it could
-- TRUNCATE a partition, disable the triggers, detach and drop. Now the runtime role owns nothing
-- and has no INSERT on audit_events (platform_events/db/runtime_role.py); the trigger functions that
-- write audit rows run as the owner (SECURITY DEFINER, in the accounts and tokens migrations), and
-- the writers below may be called by the owner only.
REVOKE EXECUTE ON FUNCTION audit_record(text, text, text, jsonb, jsonb) FROM PUBLIC;
REVOKE EXECUTE ON FUNCTION audit_record_many(text, text, text[], jsonb[], jsonb[]) FROM PUBLIC;

-- The actor context comes from SET LOCAL, which any session may set: beside it, the login role
-- that really wrote the row (session_user, which SECURITY DEFINER does not change).
ALTER TABLE audit_events ADD COLUMN db_user text;
ALTER TABLE audit_events ALTER COLUMN db_user SET DEFAULT session_user;

-- SYSTEM rows name the login role: inside the SECURITY DEFINER writers current_user is the owner.
CREATE OR REPLACE FUNCTION audit_actor()
    RETURNS TABLE (actor_type varchar, actor_id varchar, actor_display varchar, actor_ip inet,
                   actor_user_agent text, reason text, correlation_id uuid, request_id uuid)
    LANGUAGE sql STABLE
AS $$
    SELECT CASE WHEN audit_setting('actor_id') IS NULL THEN 'SYSTEM' ELSE 'USER' END,
           coalesce(audit_setting('actor_id'), session_user),
           coalesce(audit_setting('actor_display'), session_user),
           audit_setting('actor_ip')::inet,
           audit_setting('actor_user_agent'),
           audit_setting('reason'),
           audit_setting('correlation_id')::uuid,
           audit_setting('request_id')::uuid
$$;

-- Partition upkeep runs as the owner, whoever calls it (the worker's daily schedule): it moves rows
-- out of the default partition, which needs the append-only trigger lifted for that statement.
ALTER FUNCTION audit_ensure_partition(date) SECURITY DEFINER SET search_path = public, pg_temp;
