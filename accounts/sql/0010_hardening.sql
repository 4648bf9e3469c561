-- Three gaps an attack on the history rules of 0009 found (issue 8).
--
-- 1. The trigger functions below had no fixed search_path. A session may create a temporary table
--    named like ours and put pg_temp first (CREATE TEMP TABLE accounts (LIKE public.accounts);
--    SET search_path = pg_temp, public): the triggers then read and wrote the fake. That way a
--    recovery token of a suspended account was consumed. Every function now resolves names in
--    public, then pg_temp, whatever the caller's search_path (tests/platform_events/db/test_search_path.py).
-- 2. An account's id could change: two accounts swapping ids in one transaction (the tokens' foreign
--    key is deferred) moved each one's tokens to the other, unaudited. The id is now kept history too.
-- 3. The status timestamps could be forged at insert (an account inserted active with
--    activated_at = '1999-01-01'): they are now the insert trigger's own, like the update triggers'.
--    A transaction holding the owner's key (0005_history_rules in platform_events) may still give
--    them, for demo data and benches; the account.created row shows what was given.

ALTER FUNCTION accounts_email_problem(text) SET search_path = public, pg_temp;
ALTER FUNCTION accounts_login_problem(text) SET search_path = public, pg_temp;
ALTER FUNCTION trg_before_account_validate() SET search_path = public, pg_temp;
ALTER FUNCTION trg_before_account_status_change() SET search_path = public, pg_temp;
ALTER FUNCTION trg_before_account_write_claim_email() SET search_path = public, pg_temp;

CREATE OR REPLACE FUNCTION trg_before_account_keep_history() RETURNS trigger
    LANGUAGE plpgsql SECURITY DEFINER SET search_path = public, pg_temp
AS $$
DECLARE
    diff record := audit_diff(
        jsonb_build_object('id', OLD.id, 'created_at', OLD.created_at, 'status_changed_at', OLD.status_changed_at,
                           'activated_at', OLD.activated_at, 'suspended_at', OLD.suspended_at,
                           'unsuspended_at', OLD.unsuspended_at),
        jsonb_build_object('id', NEW.id, 'created_at', NEW.created_at, 'status_changed_at', NEW.status_changed_at,
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

CREATE OR REPLACE TRIGGER before_account_keep_history
    BEFORE UPDATE OF id, created_at, status_changed_at, activated_at, suspended_at, unsuspended_at ON accounts
    FOR EACH ROW
    WHEN (NEW.id IS DISTINCT FROM OLD.id
          OR NEW.created_at IS DISTINCT FROM OLD.created_at OR NEW.status_changed_at IS DISTINCT FROM OLD.status_changed_at
          OR NEW.activated_at IS DISTINCT FROM OLD.activated_at OR NEW.suspended_at IS DISTINCT FROM OLD.suspended_at
          OR NEW.unsuspended_at IS DISTINCT FROM OLD.unsuspended_at)
    EXECUTE FUNCTION trg_before_account_keep_history();

-- An insert gives no status timestamp (or status_changed_at's own default, now()): the trigger sets
-- them from the status. Seed flaw kept fixed: an account inserted as active gets its activated_at, so
-- suspend + unsuspend does not send it back to provisioned.
CREATE OR REPLACE FUNCTION trg_before_account_insert_timestamps() RETURNS trigger
    LANGUAGE plpgsql SET search_path = public, pg_temp
AS $$
DECLARE
    given text := concat_ws(', ',
        CASE WHEN NEW.activated_at IS NOT NULL THEN 'activated_at' END,
        CASE WHEN NEW.status_changed_at IS DISTINCT FROM now() AND NEW.status_changed_at IS NOT NULL THEN 'status_changed_at' END,
        CASE WHEN NEW.suspended_at IS NOT NULL THEN 'suspended_at' END,
        CASE WHEN NEW.unsuspended_at IS NOT NULL THEN 'unsuspended_at' END);
BEGIN
    IF given <> '' AND NOT history_rewrite_allowed() THEN
        RAISE EXCEPTION 'accounts: % of a new account cannot be given: the database sets it from the status', given
            USING ERRCODE = 'LA006';
    END IF;
    -- What the owner's key gave is kept; what is missing is set here.
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

CREATE OR REPLACE TRIGGER before_account_insert_timestamps
    BEFORE INSERT ON accounts
    FOR EACH ROW
    WHEN (NEW.status <> 'provisioned' OR NEW.status_changed_at IS DISTINCT FROM now()
          OR NEW.activated_at IS NOT NULL OR NEW.suspended_at IS NOT NULL OR NEW.unsuspended_at IS NOT NULL)
    EXECUTE FUNCTION trg_before_account_insert_timestamps();
