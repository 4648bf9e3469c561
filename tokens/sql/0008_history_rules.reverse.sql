DROP TRIGGER after_token_delete_audit ON tokens;
DROP FUNCTION trg_after_token_delete_audit();

-- The audit trigger of 0006, with the function of 0004 (SECURITY DEFINER since 0007).
DROP TRIGGER after_token_update_audit ON tokens;
CREATE TRIGGER after_token_update_audit
    AFTER UPDATE OF consumed_at, failed_attempts ON tokens
    FOR EACH ROW
    WHEN ((OLD.consumed_at IS NULL AND NEW.consumed_at IS NOT NULL)
          OR (OLD.failed_attempts < tokens_max_code_attempts() AND NEW.failed_attempts >= tokens_max_code_attempts()))
    EXECUTE FUNCTION trg_after_token_update_audit();

CREATE OR REPLACE FUNCTION trg_after_token_update_audit() RETURNS trigger
    LANGUAGE plpgsql SECURITY DEFINER SET search_path = public, pg_temp
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

DROP TRIGGER before_token_insert_unused ON tokens;
DROP FUNCTION trg_before_token_insert_unused();
DROP TRIGGER before_token_keep_identity ON tokens;
DROP FUNCTION trg_before_token_keep_identity();
