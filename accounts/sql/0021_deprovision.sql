-- Deprovisioning, the reversible end of an account's lifecycle (docs/rules.md, "Deprovisioning").
--
-- Any state may go to deprovisioned; a deprovisioned account goes only back to provisioned
-- (reprovisioning), with a fresh activation token. Kept by the database whoever writes: the
-- timestamps by trigger, every other move refused, the trail and the outbox named
-- account.deprovisioned / account.reprovisioned. While deprovisioned the account's tokens are
-- replaced (none can be used or mailed) and its node assignments retired, as tokenserver's
-- retire_user does: the generation at its maximum, so that no client of it syncs again until a reset
-- after reprovisioning (0022_node_unretire.sql). The address stays the account's (activated_at is
-- kept), while it is deprovisioned and after it is reprovisioned.

ALTER TABLE accounts
    ADD COLUMN deprovisioned_at timestamptz,
    ADD COLUMN reprovisioned_at timestamptz;

-- The generation a row had when deprovisioning retired it: what a reset after reprovisioning gives
-- back (0022_node_unretire.sql). Set only with the tombstone, by node_routine_retire_deprovisioned().
ALTER TABLE node_assignments ADD COLUMN retired_generation bigint;

-- tokenserver's retire_user as node_routine_retire() does it, each live row keeping its generation in
-- retired_generation. A routine move, its rows audited as node_assignment.retired: by the routine
-- trigger when called directly, here when called from the deprovisioning's trigger (the assignment
-- triggers leave what a trigger's own statements change to the trigger that made them).
CREATE FUNCTION node_routine_retire_deprovisioned(p_account bigint)
    RETURNS integer
    LANGUAGE plpgsql SECURITY DEFINER SET search_path = public, pg_temp
AS $$
DECLARE
    retired integer;
BEGIN
    WITH rows AS (
        UPDATE node_assignments
        SET replaced_at = clock_timestamp(), retired_generation = generation, generation = 9223372036854775807
        WHERE account = p_account AND replaced_at IS NULL
          -- Only a deprovisioned account's: called by hand on a live one it retires nothing.
          AND EXISTS (SELECT FROM accounts WHERE id = p_account AND status = 'deprovisioned')
        RETURNING uid, account, retired_generation, keys_changed_at
    ), written AS (
        SELECT audit_record_many('node_assignment.retired', 'account', array_agg(account::text ORDER BY uid),
                                 array_agg(jsonb_build_object('uid', uid, 'generation', retired_generation,
                                                              'keys_changed_at', keys_changed_at) ORDER BY uid),
                                 array_agg(jsonb_build_object('uid', uid, 'generation', 9223372036854775807,
                                                              'keys_changed_at', keys_changed_at) ORDER BY uid))
        FROM rows
        WHERE pg_trigger_depth() > 0
        HAVING count(*) > 0
    )
    SELECT (SELECT count(*) FROM rows) INTO retired FROM (SELECT count(*) FROM written) w;
    RETURN retired;
END;
$$;

-- Status timestamps, as 0001 kept them, with the two new moves. A suspended account deprovisioned
-- keeps its suspended_at until it is reprovisioned (the trail says who suspended it and why).
CREATE OR REPLACE FUNCTION trg_before_account_status_change() RETURNS trigger
    LANGUAGE plpgsql SET search_path = public, pg_temp
AS $$
DECLARE
    ts timestamptz := now();
BEGIN
    IF OLD.status = 'deprovisioned' AND NEW.status <> 'provisioned' THEN
        RAISE EXCEPTION 'accounts: account % is deprovisioned; only reprovisioning (set it to provisioned) brings it back', OLD.id
            USING ERRCODE = 'LA007';
    END IF;
    IF NEW.status = 'provisioned' AND OLD.status <> 'deprovisioned' THEN
        RAISE EXCEPTION 'accounts: account % cannot be set back to provisioned (set it to active to unsuspend it)', OLD.id
            USING ERRCODE = 'LA005';
    END IF;

    NEW.status_changed_at := ts;
    IF NEW.status = 'deprovisioned' THEN
        NEW.deprovisioned_at := ts;
        NEW.reprovisioned_at := NULL;
    ELSIF NEW.status = 'provisioned' THEN
        -- Reprovisioned: back to the start, its address still claimed if it had activated.
        NEW.reprovisioned_at := ts;
        NEW.deprovisioned_at := NULL;
        NEW.suspended_at := NULL;
        NEW.unsuspended_at := NULL;
    ELSIF NEW.status = 'active' THEN
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

-- A new account is provisioned, active or suspended, never deprovisioned: the end of a lifecycle
-- is a move the trail records. The rest as 0010_hardening.sql made it, with the two new timestamps.
CREATE OR REPLACE FUNCTION trg_before_account_insert_timestamps() RETURNS trigger
    LANGUAGE plpgsql SET search_path = public, pg_temp
AS $$
DECLARE
    given text := concat_ws(', ',
        CASE WHEN NEW.activated_at IS NOT NULL THEN 'activated_at' END,
        CASE WHEN NEW.status_changed_at IS DISTINCT FROM now() AND NEW.status_changed_at IS NOT NULL THEN 'status_changed_at' END,
        CASE WHEN NEW.suspended_at IS NOT NULL THEN 'suspended_at' END,
        CASE WHEN NEW.unsuspended_at IS NOT NULL THEN 'unsuspended_at' END,
        CASE WHEN NEW.deprovisioned_at IS NOT NULL THEN 'deprovisioned_at' END,
        CASE WHEN NEW.reprovisioned_at IS NOT NULL THEN 'reprovisioned_at' END);
BEGIN
    IF NEW.status = 'deprovisioned' THEN
        RAISE EXCEPTION 'accounts: a new account cannot be deprovisioned; deprovision it once it exists'
            USING ERRCODE = 'LA005';
    END IF;
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
          OR NEW.activated_at IS NOT NULL OR NEW.suspended_at IS NOT NULL OR NEW.unsuspended_at IS NOT NULL
          OR NEW.deprovisioned_at IS NOT NULL OR NEW.reprovisioned_at IS NOT NULL)
    EXECUTE FUNCTION trg_before_account_insert_timestamps();

-- The two new timestamps are history like the others: set by the status trigger only.
CREATE OR REPLACE FUNCTION trg_before_account_keep_history() RETURNS trigger
    LANGUAGE plpgsql SECURITY DEFINER SET search_path = public, pg_temp
AS $$
DECLARE
    diff record := audit_diff(
        jsonb_build_object('id', OLD.id, 'created_at', OLD.created_at, 'status_changed_at', OLD.status_changed_at,
                           'activated_at', OLD.activated_at, 'suspended_at', OLD.suspended_at,
                           'unsuspended_at', OLD.unsuspended_at, 'deprovisioned_at', OLD.deprovisioned_at,
                           'reprovisioned_at', OLD.reprovisioned_at),
        jsonb_build_object('id', NEW.id, 'created_at', NEW.created_at, 'status_changed_at', NEW.status_changed_at,
                           'activated_at', NEW.activated_at, 'suspended_at', NEW.suspended_at,
                           'unsuspended_at', NEW.unsuspended_at, 'deprovisioned_at', NEW.deprovisioned_at,
                           'reprovisioned_at', NEW.reprovisioned_at));
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
    BEFORE UPDATE OF id, created_at, status_changed_at, activated_at, suspended_at, unsuspended_at,
                     deprovisioned_at, reprovisioned_at ON accounts
    FOR EACH ROW
    WHEN (NEW.id IS DISTINCT FROM OLD.id
          OR NEW.created_at IS DISTINCT FROM OLD.created_at OR NEW.status_changed_at IS DISTINCT FROM OLD.status_changed_at
          OR NEW.activated_at IS DISTINCT FROM OLD.activated_at OR NEW.suspended_at IS DISTINCT FROM OLD.suspended_at
          OR NEW.unsuspended_at IS DISTINCT FROM OLD.unsuspended_at
          OR NEW.deprovisioned_at IS DISTINCT FROM OLD.deprovisioned_at
          OR NEW.reprovisioned_at IS DISTINCT FROM OLD.reprovisioned_at)
    EXECUTE FUNCTION trg_before_account_keep_history();

-- The trail names the two moves.
CREATE OR REPLACE FUNCTION trg_after_account_update_audit() RETURNS trigger
    LANGUAGE plpgsql SECURITY DEFINER SET search_path = public, pg_temp
AS $$
DECLARE
    diff record := audit_diff(to_jsonb(OLD), to_jsonb(NEW));
BEGIN
    PERFORM audit_record(
        CASE
            WHEN NEW.status = OLD.status THEN 'account.changed'
            WHEN NEW.status = 'deprovisioned' THEN 'account.deprovisioned'
            WHEN OLD.status = 'deprovisioned' THEN 'account.reprovisioned'
            WHEN NEW.status = 'suspended' THEN 'account.suspended'
            WHEN OLD.status = 'suspended' THEN 'account.unsuspended'
            ELSE 'account.activated'
        END,
        'account', NEW.id::text, diff.diff_before, diff.diff_after);
    RETURN NULL;
END;
$$;

-- And so does the outbox, under the same names.
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
                       WHEN n.status = 'deprovisioned' THEN 'account.deprovisioned'
                       WHEN o.status = 'deprovisioned' THEN 'account.reprovisioned'
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

-- Deprovisioned: every token of the account still usable is replaced (the mailroom skips those not
-- yet mailed, tokens/sql/0019_deprovisioned.sql), and its node assignments retired. A token locked
-- at that moment is skipped, not waited for: its consumption holds it and waits for this account's
-- row (trg_before_token_consume), so waiting would deadlock; that consumption is then refused, the
-- account being deprovisioned, and no token of a deprovisioned account is used or mailed.
-- Reprovisioned: whatever was skipped is replaced now, then a fresh activation token, which the
-- mailroom sends.
CREATE FUNCTION trg_after_account_deprovision() RETURNS trigger
    LANGUAGE plpgsql SET search_path = public, pg_temp
AS $$
BEGIN
    IF NEW.status = 'deprovisioned' THEN
        UPDATE tokens SET superseded_at = now()
        WHERE id IN (SELECT id FROM tokens
                     WHERE account = NEW.id AND consumed_at IS NULL AND superseded_at IS NULL
                     FOR UPDATE SKIP LOCKED);
        PERFORM node_routine_retire_deprovisioned(NEW.id);
    ELSE
        UPDATE tokens SET superseded_at = now()
        WHERE account = NEW.id AND consumed_at IS NULL AND superseded_at IS NULL;
        INSERT INTO tokens (account, action) VALUES (NEW.id, 'activation');
    END IF;
    RETURN NULL;
END;
$$;

CREATE TRIGGER after_account_deprovision
    AFTER UPDATE OF status ON accounts
    FOR EACH ROW
    WHEN (OLD.status IS DISTINCT FROM NEW.status AND 'deprovisioned' IN (OLD.status, NEW.status))
    EXECUTE FUNCTION trg_after_account_deprovision();
