-- "Your password was changed; if it was not you, recover it here" (docs/public-pages.md, "Your
-- account"): a new password for an active account, whoever set it (the account page, a recovery link,
-- psql), issues a notice token in the same transaction, which the mailroom mails to the account's
-- address. A notice is a token so that it is mailed as every e-mail to an account is: claimed, retried,
-- sent once. Its secret and code open nothing:
--
-- * a notice is issued only for an active account (LT006), and lasts 7 days: the mailroom keeps
--   trying that long, where a link's 15 minutes would drop a notice the SMTP server delayed;
-- * a notice is never consumed (LT010);
-- * the first password (sign-up, or activation in the same transaction) is no change; any later one
--   notifies, an update or a password set again after psql removed the row.

CREATE FUNCTION trg_before_token_insert_notice() RETURNS trigger
    LANGUAGE plpgsql SET search_path = public, pg_temp
AS $$
BEGIN
    -- The account's row is locked FOR SHARE by before_token_insert_account_live, which ran first.
    IF NOT EXISTS (SELECT FROM accounts WHERE id = NEW.account AND status = 'active') THEN
        RAISE EXCEPTION 'tokens: account % is not active; a password notice is for an active account', NEW.account
            USING ERRCODE = 'LT006';
    END IF;
    NEW.expires_at := now() + interval '7 days';
    RETURN NEW;
END;
$$;

CREATE TRIGGER before_token_insert_notice
    BEFORE INSERT ON tokens
    FOR EACH ROW WHEN (NEW.action = 'password_changed')
    EXECUTE FUNCTION trg_before_token_insert_notice();

CREATE FUNCTION trg_before_token_consume_notice() RETURNS trigger
    LANGUAGE plpgsql SET search_path = public, pg_temp
AS $$
BEGIN
    RAISE EXCEPTION 'tokens: token % is a notice; it has nothing to use', OLD.id
        USING ERRCODE = 'LT010';
END;
$$;

-- Named to fire before before_token_consume (BEFORE triggers fire in name order): a notice is refused
-- as a notice, whatever else the consumption rules would say.
CREATE TRIGGER before_token_a_notice_consumed
    BEFORE UPDATE OF consumed_at ON tokens
    FOR EACH ROW WHEN (NEW.action = 'password_changed' AND NEW.consumed_at IS NOT NULL AND OLD.consumed_at IS NULL)
    EXECUTE FUNCTION trg_before_token_consume_notice();

-- A changed password of an active account issues the notice. SECURITY DEFINER is not needed: the
-- runtime role may insert tokens, and the token rules apply to this insert as to any. It replaces a
-- notice not yet mailed itself: before_token_insert, which replaces older tokens, skips inserts made
-- by triggers. A password inserted for an account activated in an earlier transaction is a change
-- (the row was removed and set again); one inserted at activation is the first.
CREATE FUNCTION trg_after_password_change_notice() RETURNS trigger
    LANGUAGE plpgsql SET search_path = public, pg_temp
AS $$
BEGIN
    IF NOT EXISTS (SELECT FROM accounts WHERE id = NEW.account AND status = 'active'
                                              AND (TG_OP = 'UPDATE' OR activated_at < now())) THEN
        RETURN NULL;
    END IF;
    UPDATE tokens SET superseded_at = now()
    WHERE account = NEW.account AND action = 'password_changed' AND consumed_at IS NULL AND superseded_at IS NULL;
    INSERT INTO tokens (account, action) VALUES (NEW.account, 'password_changed');
    RETURN NULL;
END;
$$;

CREATE TRIGGER after_password_change_notice
    AFTER UPDATE OF password ON account_passwords
    FOR EACH ROW
    WHEN (OLD.password IS DISTINCT FROM NEW.password)
    EXECUTE FUNCTION trg_after_password_change_notice();

CREATE TRIGGER after_password_set_again_notice
    AFTER INSERT ON account_passwords
    FOR EACH ROW
    EXECUTE FUNCTION trg_after_password_change_notice();
