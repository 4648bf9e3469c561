-- A person deletes their own account (docs/public-pages.md, "Deleting an account"): the public page
-- mails a deletion token to the account's address; consuming it deprovisions the account, as the
-- person, and issues a restore token, which the mailroom sends at once: the e-mail that says when the
-- account is erased and how to restore it until then. Kept for every client:
--
-- * a deletion token is issued only for an active account (LT006 otherwise): one that never activated
--   holds nothing, and one suspended is staff's to end (the consume rules refuse a suspended
--   account's token anyway, LT005);
-- * consuming it deprovisions the account (0021_deprovision.sql's rules: its other tokens replaced, its
--   node assignments retired, its address kept) and, when the account may be restored (it had
--   activated, and was not suspended), issues the restore token in the same transaction.

CREATE FUNCTION trg_before_token_insert_deletion() RETURNS trigger
    LANGUAGE plpgsql SET search_path = public, pg_temp
AS $$
BEGIN
    -- The account's row is locked FOR SHARE by before_token_insert_account_live, which ran first.
    IF NOT EXISTS (SELECT FROM accounts WHERE id = NEW.account AND status = 'active') THEN
        RAISE EXCEPTION 'tokens: account % is not active; a deletion token is for an active account', NEW.account
            USING ERRCODE = 'LT006';
    END IF;
    RETURN NEW;
END;
$$;

CREATE TRIGGER before_token_insert_deletion
    BEFORE INSERT ON tokens
    FOR EACH ROW WHEN (NEW.action = 'deletion')
    EXECUTE FUNCTION trg_before_token_insert_deletion();

CREATE FUNCTION trg_after_token_consumed_deletion() RETURNS trigger
    LANGUAGE plpgsql SET search_path = public, pg_temp
AS $$
BEGIN
    UPDATE accounts SET status = 'deprovisioned' WHERE id = NEW.account AND status = 'active';
    IF FOUND AND EXISTS (SELECT FROM accounts
                         WHERE id = NEW.account AND activated_at IS NOT NULL AND suspended_at IS NULL) THEN
        INSERT INTO tokens (account, action) VALUES (NEW.account, 'restore');
    END IF;
    RETURN NULL;
END;
$$;

CREATE TRIGGER after_token_consumed_deletion
    AFTER UPDATE OF consumed_at ON tokens
    FOR EACH ROW WHEN (NEW.action = 'deletion' AND NEW.consumed_at IS NOT NULL AND OLD.consumed_at IS NULL)
    EXECUTE FUNCTION trg_after_token_consumed_deletion();
