-- The audit trail of tokens: issued, consumed, burnt. Never the secret or the code.

CREATE FUNCTION trg_after_token_insert_audit() RETURNS trigger
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

CREATE TRIGGER after_token_insert_audit
    AFTER INSERT ON tokens
    REFERENCING NEW TABLE AS inserted_tokens
    FOR EACH STATEMENT
    EXECUTE FUNCTION trg_after_token_insert_audit();

CREATE FUNCTION trg_after_token_update_audit() RETURNS trigger
    LANGUAGE plpgsql
AS $$
BEGIN
    IF OLD.consumed_at IS NULL AND NEW.consumed_at IS NOT NULL THEN
        PERFORM audit_record('token.consumed', 'token', NEW.id::text,
                             jsonb_build_object('consumed_at', NULL),
                             jsonb_build_object('account', NEW.account, 'action', NEW.action, 'consumed_at', NEW.consumed_at));
    ELSE
        PERFORM audit_record('token.burnt', 'token', NEW.id::text,
                             jsonb_build_object('failed_attempts', OLD.failed_attempts),
                             jsonb_build_object('account', NEW.account, 'action', NEW.action,
                                                'failed_attempts', NEW.failed_attempts));
    END IF;
    RETURN NULL;
END;
$$;

CREATE TRIGGER after_token_update_audit
    AFTER UPDATE OF consumed_at, failed_attempts ON tokens
    FOR EACH ROW
    WHEN ((OLD.consumed_at IS NULL AND NEW.consumed_at IS NOT NULL)
          OR (OLD.failed_attempts < 5 AND NEW.failed_attempts >= 5))
    EXECUTE FUNCTION trg_after_token_update_audit();
