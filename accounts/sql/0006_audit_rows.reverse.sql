CREATE OR REPLACE FUNCTION trg_after_account_insert_audit() RETURNS trigger
    LANGUAGE plpgsql
AS $$
BEGIN
    INSERT INTO audit_events (actor_type, actor_id, actor_display, actor_ip, actor_user_agent, reason, correlation_id,
                              request_id, action, resource_type, resource_id, diff_after)
    SELECT a.*, 'account.created', 'account', i.id::text,
           jsonb_build_object('email', i.email, 'login', i.login, 'status', i.status)
    FROM inserted_accounts i CROSS JOIN audit_actor() a;
    RETURN NULL;
END;
$$;
