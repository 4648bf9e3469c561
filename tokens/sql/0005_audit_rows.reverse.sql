CREATE OR REPLACE FUNCTION trg_after_token_insert_audit() RETURNS trigger
    LANGUAGE plpgsql
AS $$
BEGIN
    INSERT INTO audit_events (actor_type, actor_id, actor_display, actor_ip, actor_user_agent, reason, correlation_id,
                              request_id, action, resource_type, resource_id, diff_after)
    SELECT a.*, 'token.issued', 'token', i.id::text,
           jsonb_build_object('account', i.account, 'action', i.action, 'expires_at', i.expires_at)
    FROM inserted_tokens i CROSS JOIN audit_actor() a;
    RETURN NULL;
END;
$$;
