-- The audit trail of accounts, written by the database so that every client is audited
-- (platform_events/sql/0001_audit.sql): creation, and every change of status, e-mail or login.

CREATE FUNCTION trg_after_account_insert_audit() RETURNS trigger
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

-- Once per statement over the inserted rows, like the activation token: bulk sign-ups stay set-based.
CREATE TRIGGER after_account_insert_audit
    AFTER INSERT ON accounts
    REFERENCING NEW TABLE AS inserted_accounts
    FOR EACH STATEMENT
    EXECUTE FUNCTION trg_after_account_insert_audit();

CREATE FUNCTION trg_after_account_update_audit() RETURNS trigger
    LANGUAGE plpgsql
AS $$
DECLARE
    diff record := audit_diff(to_jsonb(OLD), to_jsonb(NEW));
BEGIN
    PERFORM audit_record(
        CASE
            WHEN NEW.status = OLD.status THEN 'account.changed'
            WHEN NEW.status = 'suspended' THEN 'account.suspended'
            WHEN OLD.status = 'suspended' THEN 'account.unsuspended'
            ELSE 'account.activated'
        END,
        'account', NEW.id::text, diff.diff_before, diff.diff_after);
    RETURN NULL;
END;
$$;

CREATE TRIGGER after_account_update_audit
    AFTER UPDATE OF status, email, login ON accounts
    FOR EACH ROW
    WHEN (OLD.status IS DISTINCT FROM NEW.status OR OLD.email IS DISTINCT FROM NEW.email
          OR OLD.login IS DISTINCT FROM NEW.login)
    EXECUTE FUNCTION trg_after_account_update_audit();
