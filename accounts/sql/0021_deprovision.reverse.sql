-- 0021's moves undone: refused while an account is deprovisioned (reprovision it first), then the
-- functions as 0001, 0002 (0008), 0010 and 0013 left them, and the two columns gone.
DO $$
BEGIN
    IF EXISTS (SELECT FROM accounts WHERE status = 'deprovisioned') THEN
        RAISE EXCEPTION 'accounts: % account(s) are deprovisioned; reprovision or erase them before undoing this migration',
            (SELECT count(*) FROM accounts WHERE status = 'deprovisioned') USING ERRCODE = 'LA005';
    END IF;
END;
$$;

DROP TRIGGER after_account_deprovision ON accounts;
DROP FUNCTION trg_after_account_deprovision();
DROP FUNCTION node_routine_retire_deprovisioned(bigint);
ALTER TABLE node_assignments DROP COLUMN retired_generation;

CREATE OR REPLACE FUNCTION trg_before_account_status_change() RETURNS trigger
    LANGUAGE plpgsql SET search_path = public, pg_temp
AS $$
DECLARE
    ts timestamptz := now();
BEGIN
    IF NEW.status = 'provisioned' THEN
        RAISE EXCEPTION 'accounts: account % cannot be set back to provisioned (set it to active to unsuspend it)', OLD.id
            USING ERRCODE = 'LA005';
    END IF;

    NEW.status_changed_at := ts;
    IF NEW.status = 'active' THEN
        IF OLD.status = 'provisioned' THEN
            NEW.activated_at := ts;
        ELSIF OLD.status = 'suspended' THEN
            NEW.unsuspended_at := ts;
            NEW.suspended_at := NULL;
            -- Revert to provisioned if never activated (seed rule).
            IF OLD.activated_at IS NULL THEN
                NEW.status := 'provisioned';
            END IF;
        END IF;
    ELSIF NEW.status = 'suspended' THEN
        NEW.suspended_at := ts;
        NEW.unsuspended_at := NULL;
    END IF;
    RETURN NEW;
END;
$$;

CREATE OR REPLACE FUNCTION trg_after_account_update_audit() RETURNS trigger
    LANGUAGE plpgsql SECURITY DEFINER SET search_path = public, pg_temp
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

CREATE OR REPLACE FUNCTION trg_after_account_update_outbox() RETURNS trigger
    LANGUAGE plpgsql SECURITY DEFINER SET search_path = public, pg_temp
AS $$
DECLARE
    change record;
BEGIN
    FOR change IN
        SELECT event_type, array_agg(id::text ORDER BY id) AS ids, array_agg(data ORDER BY id) AS datas
        FROM (
            SELECT n.id,
                   CASE
                       WHEN n.status = 'suspended' THEN 'account.suspended'
                       WHEN o.status = 'suspended' THEN 'account.unsuspended'
                       ELSE 'account.activated'
                   END AS event_type,
                   account_event_data(n) AS data,
                   1 AS rank
            FROM new_accounts n JOIN old_accounts o ON o.id = n.id
            WHERE n.status IS DISTINCT FROM o.status
            UNION ALL
            SELECT n.id, 'account.email_changed',
                   account_event_data(n) || jsonb_build_object('previous_email', o.email),
                   2
            FROM new_accounts n JOIN old_accounts o ON o.id = n.id
            WHERE n.email IS DISTINCT FROM o.email
        ) changes
        GROUP BY event_type
        ORDER BY min(rank), event_type
    LOOP
        PERFORM outbox_append_many('account', change.ids, change.event_type, change.datas);
    END LOOP;
    RETURN NULL;
END;
$$;

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

ALTER TABLE accounts DROP COLUMN deprovisioned_at, DROP COLUMN reprovisioned_at;
