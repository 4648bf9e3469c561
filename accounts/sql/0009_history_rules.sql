-- An account's trigger-kept history cannot be rewritten, and deleting an account is audited (issue 8,
-- items 7 and 10).
--
-- Before, in psql (as the app's own role): UPDATE accounts SET activated_at = NULL, or SET created_at
-- = now() - interval '10 years', was accepted and left no audit row; so did DELETE. Now the status
-- timestamps are written only by the status triggers, created_at may be given at insert (imports,
-- demo data) but not rewritten, and a transaction that holds the owner's key
-- (platform_events/sql/0005_history_rules.sql) may still rewrite them, audited.

CREATE FUNCTION trg_before_account_keep_history() RETURNS trigger
    LANGUAGE plpgsql SECURITY DEFINER SET search_path = public, pg_temp
AS $$
DECLARE
    diff record := audit_diff(
        jsonb_build_object('created_at', OLD.created_at, 'status_changed_at', OLD.status_changed_at,
                           'activated_at', OLD.activated_at, 'suspended_at', OLD.suspended_at,
                           'unsuspended_at', OLD.unsuspended_at),
        jsonb_build_object('created_at', NEW.created_at, 'status_changed_at', NEW.status_changed_at,
                           'activated_at', NEW.activated_at, 'suspended_at', NEW.suspended_at,
                           'unsuspended_at', NEW.unsuspended_at));
BEGIN
    IF NOT history_rewrite_allowed() THEN
        RAISE EXCEPTION 'accounts: % of account % cannot be set by hand: the database keeps it',
            (SELECT string_agg(field, ', ' ORDER BY field) FROM jsonb_object_keys(diff.diff_after) field), OLD.id
            USING ERRCODE = 'LA006';
    END IF;
    PERFORM audit_record('account.history_rewritten', 'account', OLD.id::text, diff.diff_before, diff.diff_after);
    RETURN NEW;
END;
$$;

-- Named to fire before before_account_status_change (BEFORE triggers fire in name order), so it sees
-- the values the statement gave, not those the status trigger then sets.
CREATE TRIGGER before_account_keep_history
    BEFORE UPDATE OF created_at, status_changed_at, activated_at, suspended_at, unsuspended_at ON accounts
    FOR EACH ROW
    WHEN (NEW.created_at IS DISTINCT FROM OLD.created_at OR NEW.status_changed_at IS DISTINCT FROM OLD.status_changed_at
          OR NEW.activated_at IS DISTINCT FROM OLD.activated_at OR NEW.suspended_at IS DISTINCT FROM OLD.suspended_at
          OR NEW.unsuspended_at IS DISTINCT FROM OLD.unsuspended_at)
    EXECUTE FUNCTION trg_before_account_keep_history();

-- account.deleted, once per statement over the deleted rows (sweep_signups deletes in batches), with
-- the actor and reason of the context like every other change.
CREATE FUNCTION trg_after_account_delete_audit() RETURNS trigger
    LANGUAGE plpgsql SECURITY DEFINER SET search_path = public, pg_temp
AS $$
BEGIN
    -- Both aggregates read the rows in the same order, so the arrays line up.
    PERFORM audit_record_many('account.deleted', 'account', array_agg(d.id::text),
                              array_agg(jsonb_build_object('email', d.email, 'login', d.login, 'status', d.status)),
                              NULL)
    FROM deleted_accounts d;
    RETURN NULL;
END;
$$;

CREATE TRIGGER after_account_delete_audit
    AFTER DELETE ON accounts
    REFERENCING OLD TABLE AS deleted_accounts
    FOR EACH STATEMENT
    EXECUTE FUNCTION trg_after_account_delete_audit();
