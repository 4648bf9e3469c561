-- The insert trigger and function of 0001, the keep-history trigger and function of 0009.
CREATE OR REPLACE TRIGGER before_account_insert_timestamps
    BEFORE INSERT ON accounts
    FOR EACH ROW
    WHEN (NEW.status <> 'provisioned' OR NEW.status_changed_at IS NULL
          OR NEW.activated_at IS NOT NULL OR NEW.suspended_at IS NOT NULL)
    EXECUTE FUNCTION trg_before_account_insert_timestamps();

CREATE OR REPLACE FUNCTION trg_before_account_insert_timestamps() RETURNS trigger
    LANGUAGE plpgsql
AS $$
BEGIN
    NEW.status_changed_at := coalesce(NEW.status_changed_at, now());
    IF NEW.status = 'provisioned' THEN
        -- Only activation sets activated_at: it is what claims the e-mail address.
        NEW.activated_at := NULL;
        NEW.suspended_at := NULL;
    ELSIF NEW.status = 'active' THEN
        NEW.activated_at := coalesce(NEW.activated_at, now());
    ELSE
        NEW.suspended_at := coalesce(NEW.suspended_at, now());
    END IF;
    RETURN NEW;
END;
$$;
ALTER FUNCTION trg_before_account_insert_timestamps() RESET search_path;

CREATE OR REPLACE TRIGGER before_account_keep_history
    BEFORE UPDATE OF created_at, status_changed_at, activated_at, suspended_at, unsuspended_at ON accounts
    FOR EACH ROW
    WHEN (NEW.created_at IS DISTINCT FROM OLD.created_at OR NEW.status_changed_at IS DISTINCT FROM OLD.status_changed_at
          OR NEW.activated_at IS DISTINCT FROM OLD.activated_at OR NEW.suspended_at IS DISTINCT FROM OLD.suspended_at
          OR NEW.unsuspended_at IS DISTINCT FROM OLD.unsuspended_at)
    EXECUTE FUNCTION trg_before_account_keep_history();

CREATE OR REPLACE FUNCTION trg_before_account_keep_history() RETURNS trigger
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

ALTER FUNCTION trg_before_account_write_claim_email() RESET search_path;
ALTER FUNCTION trg_before_account_status_change() RESET search_path;
ALTER FUNCTION trg_before_account_validate() RESET search_path;
ALTER FUNCTION accounts_login_problem(text) RESET search_path;
ALTER FUNCTION accounts_email_problem(text) RESET search_path;
