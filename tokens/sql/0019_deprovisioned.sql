-- Tokens of a deprovisioned account (accounts/sql/0021_deprovision.sql; docs/rules.md, "Deprovisioning").
-- Deprovisioning replaces the account's live tokens; these rules keep it so whoever writes: no token
-- of a deprovisioned account can be used or issued (LT009) but a restore token, which exists for
-- deprovisioned accounts only (LT006) and whose consumption reprovisions the account; a token
-- replaced by deprovisioning before it was mailed says so in its mail record.

-- The consumption's rules as 0012_code_only_burnt.sql made them, the account read first: a
-- deprovisioned account's token (but a restore token) is refused before anything about the token
-- itself is said.
CREATE OR REPLACE FUNCTION trg_before_token_consume() RETURNS trigger
    LANGUAGE plpgsql
    SET search_path = public, pg_temp
AS $$
DECLARE
    owner_status account_status;
BEGIN
    -- Lock the account so a concurrent suspension or deprovisioning waits for this consumption, or
    -- wins before it.
    SELECT status INTO owner_status FROM accounts WHERE id = OLD.account FOR NO KEY UPDATE;
    IF owner_status = 'deprovisioned' AND OLD.action <> 'restore' THEN
        RAISE EXCEPTION 'tokens: account % is deprovisioned', OLD.account USING ERRCODE = 'LT009';
    END IF;
    IF OLD.consumed_at IS NOT NULL THEN
        RAISE EXCEPTION 'tokens: token % has already been used', OLD.id USING ERRCODE = 'LT001';
    END IF;
    IF OLD.superseded_at IS NOT NULL THEN
        RAISE EXCEPTION 'tokens: token % was replaced by a newer one', OLD.id USING ERRCODE = 'LT002';
    END IF;
    IF NEW.consumed_with = 'code' AND OLD.failed_attempts >= tokens_max_code_attempts() THEN
        RAISE EXCEPTION 'tokens: the code of token % no longer works after too many wrong codes; its link still does', OLD.id
            USING ERRCODE = 'LT003';
    END IF;
    IF OLD.expires_at <= now() THEN
        RAISE EXCEPTION 'tokens: token % has expired', OLD.id USING ERRCODE = 'LT004';
    END IF;
    IF owner_status = 'suspended' THEN
        RAISE EXCEPTION 'tokens: account % is suspended', OLD.account USING ERRCODE = 'LT005';
    END IF;
    IF OLD.action = 'activation' AND owner_status <> 'provisioned' THEN
        RAISE EXCEPTION 'tokens: account % is already active', OLD.account USING ERRCODE = 'LT006';
    END IF;
    IF OLD.action = 'password_recovery' AND owner_status <> 'active' THEN
        RAISE EXCEPTION 'tokens: account % is not active', OLD.account USING ERRCODE = 'LT006';
    END IF;
    IF OLD.action = 'restore' AND owner_status <> 'deprovisioned' THEN
        RAISE EXCEPTION 'tokens: account % is not deprovisioned', OLD.account USING ERRCODE = 'LT006';
    END IF;
    RETURN NEW;
END;
$$;

-- A token inserted for a deprovisioned account is refused, but a restore token, which is refused for
-- any other. FOR SHARE: a deprovisioning under way waits for this insert's transaction and then
-- replaces the new token too, or commits first and this insert sees it. For every insert, the
-- database's own too (an account's first token, reprovisioning's): a trigger of the session's own,
-- on a temporary table, inserts at depth 1 and is no less a direct write.
CREATE FUNCTION trg_before_token_insert_account_live() RETURNS trigger
    LANGUAGE plpgsql
    SET search_path = public, pg_temp
AS $$
DECLARE
    owner_status account_status;
    owner_activated timestamptz;
    owner_suspended timestamptz;
BEGIN
    -- The row locked whatever its status (a locking clause with the status in its WHERE would lock
    -- nothing while the account is live, which is when it matters).
    SELECT status, activated_at, suspended_at INTO owner_status, owner_activated, owner_suspended
    FROM accounts WHERE id = NEW.account FOR SHARE;
    IF owner_status = 'deprovisioned' AND NEW.action <> 'restore' THEN
        RAISE EXCEPTION 'tokens: account % is deprovisioned; no token is issued for it', NEW.account
            USING ERRCODE = 'LT009';
    END IF;
    IF NEW.action = 'restore' AND owner_status IS DISTINCT FROM 'deprovisioned' THEN
        RAISE EXCEPTION 'tokens: account % is not deprovisioned; a restore token is for a deprovisioned account', NEW.account
            USING ERRCODE = 'LT006';
    END IF;
    IF NEW.action = 'restore' AND owner_activated IS NULL THEN
        RAISE EXCEPTION 'tokens: account % never activated; it holds no address to restore', NEW.account
            USING ERRCODE = 'LT006';
    END IF;
    -- Deprovisioned while suspended (it keeps suspended_at): restoring it is staff's decision, never
    -- the person's way round a suspension.
    IF NEW.action = 'restore' AND owner_suspended IS NOT NULL THEN
        RAISE EXCEPTION 'tokens: account % was suspended when it was deprovisioned; only staff may reprovision it', NEW.account
            USING ERRCODE = 'LT006';
    END IF;
    RETURN NEW;
END;
$$;

CREATE TRIGGER before_token_insert_account_live
    BEFORE INSERT ON tokens
    FOR EACH ROW
    EXECUTE FUNCTION trg_before_token_insert_account_live();

-- The mail record of a token replaced before it went out says why, as 0011_used_while_mailing.sql
-- made it, with deprovisioning as a reason of its own.
CREATE OR REPLACE FUNCTION trg_before_token_mail_unneeded() RETURNS trigger
    LANGUAGE plpgsql
    SET search_path = public, pg_temp
AS $$
BEGIN
    IF NEW.consumed_at IS NOT NULL AND OLD.mail_claim IS NOT NULL THEN
        NEW.mail_state := 'sent';
        NEW.mail_error := 'used while its mail run held it: its e-mail went out, its sent-mark was lost';
        RETURN NEW;
    END IF;
    NEW.mail_state := 'skipped';
    NEW.mail_error := CASE
        WHEN NEW.consumed_at IS NOT NULL THEN 'used before it was mailed'
        WHEN EXISTS (SELECT FROM accounts WHERE id = NEW.account AND status = 'deprovisioned')
            THEN 'its account was deprovisioned before it was mailed'
        ELSE 'replaced by a newer token before it was mailed' END;
    RETURN NEW;
END;
$$;

-- Consuming a token: an activation token activates a provisioned account (0001's rule), a restore
-- token reprovisions a deprovisioned one (which issues its fresh activation token).
CREATE OR REPLACE FUNCTION trg_after_token_consumed() RETURNS trigger
    LANGUAGE plpgsql
    SET search_path = public, pg_temp
AS $$
BEGIN
    IF NEW.action = 'activation' THEN
        UPDATE accounts SET status = 'active' WHERE id = NEW.account AND status = 'provisioned';
    ELSIF NEW.action = 'restore' THEN
        UPDATE accounts SET status = 'provisioned' WHERE id = NEW.account AND status = 'deprovisioned';
    END IF;
    RETURN NULL;
END;
$$;
