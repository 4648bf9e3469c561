-- End users' own sessions (the /account/ pages): one row per sign-in. The browser holds a random
-- secret in a cookie of its own; the row keeps only its SHA-256, so a copy of the table signs nobody
-- in. The rows are also the account's list of recent sign-ins (when, from which address, which browser).
-- Error messages start with "accounts:" and carry SQLSTATEs of class LA.

CREATE TABLE account_sessions (
    id             bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    account        bigint NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    secret_digest  bytea NOT NULL UNIQUE CHECK (length(secret_digest) = 32),
    -- When the password the sign-in checked was set: a session is refused once it has changed since.
    password_changed_at timestamptz NOT NULL,
    signed_in_at   timestamptz NOT NULL DEFAULT now(),
    expires_at     timestamptz NOT NULL,
    ended_at       timestamptz,
    -- Why it ended: signed out, the password changed, the account left the active state, or a change of
    -- its address was undone from the old address (tokens/sql/0026_email_change.sql).
    ended_by       text CHECK (ended_by IN ('sign-out', 'password', 'suspended', 'deprovisioned', 'address')),
    client_address inet,
    user_agent     varchar(256) NOT NULL DEFAULT '',
    CHECK ((ended_at IS NULL) = (ended_by IS NULL)),
    CHECK (expires_at > signed_in_at)
);

-- The account page lists an account's latest sign-ins; the cleanup deletes by age (signed_in_at).
CREATE INDEX account_sessions_account_idx ON account_sessions (account, signed_in_at DESC);
CREATE INDEX account_sessions_signed_in_idx ON account_sessions (signed_in_at);

-- Only an active account signs in, whoever inserts the row, and only with the password it has now:
-- the sign-in says when the password it checked was set, and a password changed since (between the
-- check and this insert) refuses it. The account and its password are locked FOR SHARE, so a
-- suspension, a deprovisioning or a new password waits for the sign-in and then ends its session
-- too. A session starts now and live: the record of when and how it ended is the database's. A transaction holding
-- the owner's key (platform_events/sql/0005_history_rules.sql) may give an earlier start: the demo
-- data and the tests age sign-ins so.
CREATE FUNCTION trg_before_account_session_insert() RETURNS trigger
    LANGUAGE plpgsql SET search_path = public, pg_temp
AS $$
DECLARE
    state account_status;
    password_set timestamptz;
BEGIN
    SELECT status INTO state FROM accounts WHERE id = NEW.account FOR SHARE;
    IF state IS DISTINCT FROM 'active' THEN
        RAISE EXCEPTION 'accounts: account % is %; only an active account signs in', NEW.account, coalesce(state::text, 'missing')
            USING ERRCODE = 'LA010';
    END IF;
    SELECT changed_at INTO password_set FROM account_passwords WHERE account = NEW.account FOR SHARE;
    IF password_set IS DISTINCT FROM NEW.password_changed_at THEN
        RAISE EXCEPTION 'accounts: the password of account % is not the one this sign-in checked; sign in again', NEW.account
            USING ERRCODE = 'LA010';
    END IF;
    IF NEW.ended_at IS NOT NULL OR NEW.ended_by IS NOT NULL THEN
        RAISE EXCEPTION 'accounts: a session starts live; it is ended by an update'
            USING ERRCODE = 'LA011';
    END IF;
    IF NOT history_rewrite_allowed() THEN
        NEW.signed_in_at := now();
    END IF;
    RETURN NEW;
END;
$$;

CREATE TRIGGER before_account_session_insert
    BEFORE INSERT ON account_sessions
    FOR EACH ROW
    EXECUTE FUNCTION trg_before_account_session_insert();

-- A session's record is not rewritten: it ends once (ended_by), at the time the database reads. With
-- the owner's key, its times may be (whose session it is, its secret and its browser never).
CREATE FUNCTION trg_before_account_session_update() RETURNS trigger
    LANGUAGE plpgsql SET search_path = public, pg_temp
AS $$
BEGIN
    IF history_rewrite_allowed()
       AND (NEW.id, NEW.account, NEW.secret_digest, NEW.client_address, NEW.user_agent)
           IS NOT DISTINCT FROM (OLD.id, OLD.account, OLD.secret_digest, OLD.client_address, OLD.user_agent) THEN
        RETURN NEW;
    END IF;
    IF (NEW.id, NEW.account, NEW.secret_digest, NEW.password_changed_at, NEW.signed_in_at, NEW.expires_at,
        NEW.client_address, NEW.user_agent)
           IS DISTINCT FROM (OLD.id, OLD.account, OLD.secret_digest, OLD.password_changed_at, OLD.signed_in_at,
                             OLD.expires_at, OLD.client_address, OLD.user_agent)
       OR OLD.ended_at IS NOT NULL
       OR NEW.ended_by IS NULL THEN
        RAISE EXCEPTION 'accounts: session % is not rewritten; a live session may only be ended (ended_by)', OLD.id
            USING ERRCODE = 'LA011';
    END IF;
    NEW.ended_at := now();
    RETURN NEW;
END;
$$;

CREATE TRIGGER before_account_session_update
    BEFORE UPDATE ON account_sessions
    FOR EACH ROW
    EXECUTE FUNCTION trg_before_account_session_update();

-- A live session is ended, not deleted, so that the account's list of sign-ins shows it; the cleanup
-- deletes ended and expired ones. Rows that go with their account (erasure, ON DELETE CASCADE) go.
CREATE FUNCTION trg_before_account_session_delete() RETURNS trigger
    LANGUAGE plpgsql SET search_path = public, pg_temp
AS $$
BEGIN
    IF OLD.ended_at IS NULL AND OLD.expires_at > now()
       AND EXISTS (SELECT FROM accounts WHERE id = OLD.account AND status <> 'erased') THEN
        RAISE EXCEPTION 'accounts: session % is live; end it (ended_by) rather than delete it', OLD.id
            USING ERRCODE = 'LA011';
    END IF;
    RETURN OLD;
END;
$$;

CREATE TRIGGER before_account_session_delete
    BEFORE DELETE ON account_sessions
    FOR EACH ROW
    EXECUTE FUNCTION trg_before_account_session_delete();

-- An account that leaves the active state ends its sessions, whoever changed it (the admin, the API,
-- psql). An erased account keeps no record of its sign-ins: their addresses and browsers are the
-- person's. SECURITY DEFINER: the erasure's transaction deletes what the runtime role may not.
CREATE FUNCTION trg_after_account_status_sessions() RETURNS trigger
    LANGUAGE plpgsql SECURITY DEFINER SET search_path = public, pg_temp
AS $$
BEGIN
    IF NEW.status = 'erased' THEN
        DELETE FROM account_sessions WHERE account = NEW.id;
    ELSIF NEW.status IN ('suspended', 'deprovisioned') THEN
        UPDATE account_sessions SET ended_by = NEW.status::text
        WHERE account = NEW.id AND ended_at IS NULL;
    END IF;
    RETURN NULL;
END;
$$;

CREATE TRIGGER after_account_status_sessions
    AFTER UPDATE OF status ON accounts
    FOR EACH ROW
    WHEN (OLD.status IS DISTINCT FROM NEW.status AND NEW.status IN ('suspended', 'deprovisioned', 'erased'))
    EXECUTE FUNCTION trg_after_account_status_sessions();

-- A new password ends every session of the account, whoever set it (the account page, a recovery
-- link, psql), and so does a password removed or set again after one was removed: whoever knew the
-- old one is signed out. The account page then signs its own browser in again with a new session.
CREATE FUNCTION trg_after_password_sessions() RETURNS trigger
    LANGUAGE plpgsql SECURITY DEFINER SET search_path = public, pg_temp
AS $$
BEGIN
    UPDATE account_sessions SET ended_by = 'password'
    WHERE account = CASE WHEN TG_OP = 'DELETE' THEN OLD.account ELSE NEW.account END AND ended_at IS NULL;
    RETURN NULL;
END;
$$;

CREATE TRIGGER after_password_sessions
    AFTER UPDATE OF password ON account_passwords
    FOR EACH ROW
    WHEN (OLD.password IS DISTINCT FROM NEW.password)
    EXECUTE FUNCTION trg_after_password_sessions();

CREATE TRIGGER after_password_sessions_set_or_removed
    AFTER INSERT OR DELETE ON account_passwords
    FOR EACH ROW
    EXECUTE FUNCTION trg_after_password_sessions();
