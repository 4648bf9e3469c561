-- 0012_code_only_burnt.sql's consumption, 0011_used_while_mailing.sql's mail record and 0001's
-- consumed token back; refused while a restore token exists (the value 0018 added stays unused).
DO $$
BEGIN
    IF EXISTS (SELECT FROM tokens WHERE action = 'restore') THEN
        RAISE EXCEPTION 'tokens: restore tokens exist; delete them before undoing this migration' USING ERRCODE = 'LT006';
    END IF;
END;
$$;

DROP TRIGGER before_token_insert_account_live ON tokens;
DROP FUNCTION trg_before_token_insert_account_live();

CREATE OR REPLACE FUNCTION trg_before_token_consume() RETURNS trigger
    LANGUAGE plpgsql
    SET search_path = public, pg_temp
AS $$
DECLARE
    owner_status account_status;
BEGIN
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

    -- Lock the account so a concurrent suspension waits for this consumption, or wins before it.
    SELECT status INTO owner_status FROM accounts WHERE id = OLD.account FOR NO KEY UPDATE;
    IF owner_status = 'suspended' THEN
        RAISE EXCEPTION 'tokens: account % is suspended', OLD.account USING ERRCODE = 'LT005';
    END IF;
    IF OLD.action = 'activation' AND owner_status <> 'provisioned' THEN
        RAISE EXCEPTION 'tokens: account % is already active', OLD.account USING ERRCODE = 'LT006';
    END IF;
    IF OLD.action = 'password_recovery' AND owner_status <> 'active' THEN
        RAISE EXCEPTION 'tokens: account % is not active', OLD.account USING ERRCODE = 'LT006';
    END IF;
    RETURN NEW;
END;
$$;

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
    NEW.mail_error := CASE WHEN NEW.consumed_at IS NOT NULL THEN 'used before it was mailed'
                           ELSE 'replaced by a newer token before it was mailed' END;
    RETURN NEW;
END;
$$;

CREATE OR REPLACE FUNCTION trg_after_token_consumed() RETURNS trigger
    LANGUAGE plpgsql
    SET search_path = public, pg_temp
AS $$
BEGIN
    IF NEW.action <> 'activation' THEN
        RETURN NULL;
    END IF;
    UPDATE accounts SET status = 'active' WHERE id = NEW.account AND status = 'provisioned';
    RETURN NULL;
END;
$$;

