-- A change of address (docs/public-pages.md, "Your account"; docs/rules.md, "Changing the address"),
-- kept for every client, the account page's, the API's and psql's alike:
--
-- * An email_change token carries the new address (tokens.email) and is mailed to it; until its link
--   is used the old address stays in force. It is issued only for an active account (LT006), for an
--   address the account rules accept (LA001) and not already the account's (LT011); a newer one
--   replaces it (one live per account and action, as every token).
-- * Consumed, it makes the new address the account's, claimed as at activation: refused when another
--   activated account holds it (accounts_email_claimed_key, whoever's it is not said), while a sign-up
--   never activated with it does not stand in the way. Two accounts taking one address at once: the
--   unique index lets one win. The audit trail has the account's old and new address, the outbox
--   account.email_changed (the account triggers write both).
-- * Links mailed to the address it leaves (a recovery, a deletion) stop working: that address no
--   longer holds the account.
-- * The old address gets an email_change_undo token, with the old address, for 7 days: its link puts
--   the old address back, ends every session of the account, and voids a change still pending and the
--   links mailed meanwhile (to the address it takes back from).
-- * While an undo is live, whoever changed the address cannot take it away (LT012): the address does
--   not change again, and the person does not delete the account (whose restore e-mail would go to
--   the new address, and whose deprovisioning would replace the undo), until the undo is used or
--   expires. Staff may still deprovision.
-- * A new password voids a change still pending: a person who recovers the account after a stolen
--   session also stops the change that session asked for.
-- * A token's address is written once (LT007), like the rest of its identity.

-- text: the address rule (at most 254 characters) refuses a longer one in its own words.
ALTER TABLE tokens ADD COLUMN email text;
ALTER TABLE tokens ADD CONSTRAINT tokens_email_only_for_address_changes
    CHECK ((email IS NOT NULL) = (action IN ('email_change', 'email_change_undo')));

-- LT012 while the account's undo is live: what it would take away waits for it.
CREATE FUNCTION tokens_refuse_while_undoable(account_id bigint, what text) RETURNS void
    LANGUAGE plpgsql SET search_path = public, pg_temp
AS $$
DECLARE
    until timestamptz;
BEGIN
    SELECT expires_at INTO until FROM tokens
    WHERE account = account_id AND action = 'email_change_undo'
      AND consumed_at IS NULL AND superseded_at IS NULL AND expires_at > now();
    IF FOUND THEN
        RAISE EXCEPTION 'tokens: the address of account % changed lately; it % once the link mailed to the old address is used or expires (%)',
            account_id, what, to_char(until AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI "UTC"')
            USING ERRCODE = 'LT012';
    END IF;
END;
$$;

CREATE FUNCTION trg_before_token_insert_address() RETURNS trigger
    LANGUAGE plpgsql SET search_path = public, pg_temp
AS $$
DECLARE
    problem text := accounts_email_problem(NEW.email);
    current_email text;
BEGIN
    IF problem IS NOT NULL THEN
        RAISE EXCEPTION 'accounts: %', problem USING ERRCODE = 'LA001';
    END IF;
    -- The account's row is locked FOR SHARE by before_token_insert_account_live, which ran first.
    SELECT email INTO current_email FROM accounts WHERE id = NEW.account AND status = 'active';
    IF NOT FOUND THEN
        RAISE EXCEPTION 'tokens: account % is not active; an address is changed only for an active account', NEW.account
            USING ERRCODE = 'LT006';
    END IF;
    IF NEW.action = 'email_change' AND NEW.email = current_email THEN
        RAISE EXCEPTION 'tokens: % is already the address of account %', NEW.email, NEW.account
            USING ERRCODE = 'LT011';
    END IF;
    IF NEW.action = 'email_change' THEN
        PERFORM tokens_refuse_while_undoable(NEW.account, 'changes again');
    END IF;
    IF NEW.action = 'email_change_undo' THEN
        NEW.expires_at := now() + interval '7 days';
    END IF;
    RETURN NEW;
END;
$$;

CREATE TRIGGER before_token_insert_address
    BEFORE INSERT ON tokens
    FOR EACH ROW WHEN (NEW.action IN ('email_change', 'email_change_undo'))
    EXECUTE FUNCTION trg_before_token_insert_address();

CREATE FUNCTION trg_before_token_insert_deletion_undoable() RETURNS trigger
    LANGUAGE plpgsql SET search_path = public, pg_temp
AS $$
BEGIN
    PERFORM tokens_refuse_while_undoable(NEW.account, 'is deleted');
    RETURN NEW;
END;
$$;

CREATE TRIGGER before_token_insert_deletion_undoable
    BEFORE INSERT ON tokens
    FOR EACH ROW WHEN (NEW.action = 'deletion')
    EXECUTE FUNCTION trg_before_token_insert_deletion_undoable();

CREATE FUNCTION trg_before_token_keep_email() RETURNS trigger
    LANGUAGE plpgsql SET search_path = public, pg_temp
AS $$
BEGIN
    IF NOT history_rewrite_allowed() THEN
        RAISE EXCEPTION 'tokens: the address of token % is written when it is issued, and cannot be changed', OLD.id
            USING ERRCODE = 'LT007';
    END IF;
    RETURN NEW;
END;
$$;

CREATE TRIGGER before_token_keep_email
    BEFORE UPDATE OF email ON tokens
    FOR EACH ROW WHEN (NEW.email IS DISTINCT FROM OLD.email)
    EXECUTE FUNCTION trg_before_token_keep_email();

-- Named to fire after before_token_consume (BEFORE triggers fire in name order), which locks the
-- account and refuses a suspended or deprovisioned one: only an active account changes its address.
CREATE FUNCTION trg_before_token_consume_address() RETURNS trigger
    LANGUAGE plpgsql SET search_path = public, pg_temp
AS $$
BEGIN
    IF NOT EXISTS (SELECT FROM accounts WHERE id = OLD.account AND status = 'active') THEN
        RAISE EXCEPTION 'tokens: account % is not active', OLD.account USING ERRCODE = 'LT006';
    END IF;
    RETURN NEW;
END;
$$;

CREATE TRIGGER before_token_consume_address
    BEFORE UPDATE OF consumed_at ON tokens
    FOR EACH ROW WHEN (NEW.action IN ('email_change', 'email_change_undo')
                       AND NEW.consumed_at IS NOT NULL AND OLD.consumed_at IS NULL)
    EXECUTE FUNCTION trg_before_token_consume_address();

CREATE FUNCTION trg_after_token_consumed_address() RETURNS trigger
    LANGUAGE plpgsql SET search_path = public, pg_temp
AS $$
DECLARE
    old_email text;
BEGIN
    SELECT email INTO old_email FROM accounts WHERE id = NEW.account;
    -- The claim rule is the unique index's: another activated account's address refuses the update.
    UPDATE accounts SET email = NEW.email WHERE id = NEW.account AND email IS DISTINCT FROM NEW.email;
    -- Links mailed to the address left behind no longer work.
    UPDATE tokens SET superseded_at = now()
    WHERE account = NEW.account AND action IN ('password_recovery', 'deletion', 'email_change') AND id <> NEW.id
      AND consumed_at IS NULL AND superseded_at IS NULL;
    IF NEW.action = 'email_change' THEN
        INSERT INTO tokens (account, action, email) VALUES (NEW.account, 'email_change_undo', old_email);
    ELSE
        -- The old address is back: whoever made the change is signed out.
        UPDATE account_sessions SET ended_by = 'address' WHERE account = NEW.account AND ended_at IS NULL;
    END IF;
    RETURN NULL;
END;
$$;

CREATE TRIGGER after_token_consumed_address
    AFTER UPDATE OF consumed_at ON tokens
    FOR EACH ROW WHEN (NEW.action IN ('email_change', 'email_change_undo')
                       AND NEW.consumed_at IS NOT NULL AND OLD.consumed_at IS NULL)
    EXECUTE FUNCTION trg_after_token_consumed_address();

-- A new password (or one removed or set again) voids a change of address still pending.
CREATE FUNCTION trg_after_password_void_address_change() RETURNS trigger
    LANGUAGE plpgsql SET search_path = public, pg_temp
AS $$
BEGIN
    UPDATE tokens SET superseded_at = now()
    WHERE account = CASE WHEN TG_OP = 'DELETE' THEN OLD.account ELSE NEW.account END
      AND action = 'email_change' AND consumed_at IS NULL AND superseded_at IS NULL;
    RETURN NULL;
END;
$$;

CREATE TRIGGER after_password_void_address_change
    AFTER INSERT OR UPDATE OF password OR DELETE ON account_passwords
    FOR EACH ROW
    EXECUTE FUNCTION trg_after_password_void_address_change();
