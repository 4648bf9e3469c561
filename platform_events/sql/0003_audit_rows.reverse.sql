CREATE OR REPLACE FUNCTION audit_record(action text, resource_type text, resource_id text, diff_before jsonb, diff_after jsonb)
    RETURNS void
    LANGUAGE sql
AS $$
    INSERT INTO audit_events (actor_type, actor_id, actor_display, actor_ip, actor_user_agent, reason, correlation_id,
                              request_id, action, resource_type, resource_id, diff_before, diff_after)
    SELECT a.*, action, resource_type, resource_id, diff_before, diff_after FROM audit_actor() a
$$;
DROP FUNCTION IF EXISTS audit_record_many(text, text, text[], jsonb[], jsonb[]);
