CREATE OR REPLACE FUNCTION audit_actor()
    RETURNS TABLE (actor_type varchar, actor_id varchar, actor_display varchar, actor_ip inet,
                   actor_user_agent text, reason text, correlation_id uuid, request_id uuid)
    LANGUAGE sql STABLE SET search_path = public, pg_temp
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
DROP TABLE idempotency_keys;
DROP TABLE api_clients;
DROP FUNCTION trg_before_idempotency_key_change();
DROP FUNCTION trg_after_api_client_audit();
DROP FUNCTION trg_before_api_client_delete();
DROP FUNCTION trg_before_api_client_update();
