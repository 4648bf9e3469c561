ALTER FUNCTION audit_ensure_partition(date) SECURITY INVOKER RESET search_path;

CREATE OR REPLACE FUNCTION audit_actor()
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

ALTER TABLE audit_events DROP COLUMN db_user;

GRANT EXECUTE ON FUNCTION audit_record_many(text, text, text[], jsonb[], jsonb[]) TO PUBLIC;
GRANT EXECUTE ON FUNCTION audit_record(text, text, text, jsonb, jsonb) TO PUBLIC;
