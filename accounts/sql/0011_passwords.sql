-- Passwords (issue 10): chosen at sign-up, at activation or at recovery, stored only as Django
-- password hashes (Argon2id). A table of their own rather than a column of accounts: the account's
-- audit rows keep every changed column, and a hash must never reach the trail, the admin or a log.

CREATE TABLE account_passwords (
    account    bigint PRIMARY KEY REFERENCES accounts (id) ON DELETE CASCADE,
    -- Django's "<algorithm>$...$..." form: a typed password, which has no such shape, is refused.
    password   varchar(128) NOT NULL CHECK (password ~ '^[a-z0-9_]+\$[^$]+\$'),
    changed_at timestamptz NOT NULL DEFAULT now()
);

-- The database keeps changed_at, for every client.
CREATE FUNCTION trg_before_password_change() RETURNS trigger
    LANGUAGE plpgsql SET search_path = public, pg_temp
AS $$
BEGIN
    NEW.changed_at := now();
    RETURN NEW;
END;
$$;

CREATE TRIGGER before_password_change
    BEFORE INSERT OR UPDATE ON account_passwords
    FOR EACH ROW
    EXECUTE FUNCTION trg_before_password_change();

-- Audited as account.password_set / account.password_removed on the account: when, never the hash.
-- A password that goes with its account (ON DELETE CASCADE) is covered by account.deleted.
CREATE FUNCTION trg_after_password_audit() RETURNS trigger
    LANGUAGE plpgsql SECURITY DEFINER SET search_path = public, pg_temp
AS $$
BEGIN
    IF TG_OP = 'DELETE' THEN
        IF EXISTS (SELECT 1 FROM accounts WHERE id = OLD.account) THEN
            PERFORM audit_record('account.password_removed', 'account', OLD.account::text,
                                 jsonb_build_object('password_changed_at', OLD.changed_at), NULL);
        END IF;
        RETURN NULL;
    END IF;
    PERFORM audit_record('account.password_set', 'account', NEW.account::text,
                         CASE WHEN TG_OP = 'UPDATE' THEN jsonb_build_object('password_changed_at', OLD.changed_at) END,
                         jsonb_build_object('password_changed_at', NEW.changed_at));
    RETURN NULL;
END;
$$;

CREATE TRIGGER after_password_audit
    AFTER INSERT OR UPDATE OR DELETE ON account_passwords
    FOR EACH ROW
    EXECUTE FUNCTION trg_after_password_audit();
