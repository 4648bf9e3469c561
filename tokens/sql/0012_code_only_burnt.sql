-- Wrong codes stop the code, not the link (issue 10). Anyone who knew a login could type five wrong
-- codes and kill the e-mailed link too, a 256-bit secret they never saw, and the person could not
-- activate. A consumption now says how it was made, consumed_with 'link' or 'code' (unsaid, as in a
-- plain psql UPDATE: by link); at tokens_max_code_attempts() wrong codes a consumption by code is
-- refused (LT003), one by link is not. How a token was consumed is kept history like the rest.
ALTER TABLE tokens ADD COLUMN consumed_with text
    CONSTRAINT tokens_consumed_with_check CHECK (consumed_with IS NULL OR (consumed_with IN ('link', 'code') AND consumed_at IS NOT NULL));

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

-- Said only together with the consumption: afterwards it is history (the owner's key rewrites it).
CREATE FUNCTION trg_before_token_keep_consumed_with() RETURNS trigger
    LANGUAGE plpgsql
    SET search_path = public, pg_temp
AS $$
BEGIN
    IF NOT history_rewrite_allowed() THEN
        RAISE EXCEPTION 'tokens: how token % was consumed is said when it is consumed, and cannot be changed', OLD.id
            USING ERRCODE = 'LT007';
    END IF;
    RETURN NEW;
END;
$$;

CREATE TRIGGER before_token_keep_consumed_with
    BEFORE UPDATE OF consumed_with ON tokens
    FOR EACH ROW
    WHEN (NEW.consumed_with IS DISTINCT FROM OLD.consumed_with
          AND NOT (OLD.consumed_at IS NULL AND NEW.consumed_at IS NOT NULL))
    EXECUTE FUNCTION trg_before_token_keep_consumed_with();
