-- An identity provider's Users (docs/scim.md): the accounts an API client holding the scope scim
-- created through SCIM, with the userName and the externalId it gave each.
--
-- * The userName is the provider's name for the person, kept as sent: an identity provider's is
--   usually an address (Okta's login, Entra ID's userPrincipalName), which a login cannot be
--   (0007_address_rules.sql). The account's login is the userName when the userName is a valid
--   login, and otherwise one the service derives (lifecycle/scim/provisioning.py). A userName is
--   unique ignoring case across every client (RFC 7643 §4.1.1: across the service provider).
-- * An account is one client's User, that client's for good; a client that is no longer a User's
--   (the scope taken away) keeps the row and sees nothing.
-- * The rows follow their account: a deprovisioned account keeps its row, so that the provider
--   creating the same userName again restores that account; an erased account's row is deleted
--   and a deleted sign-up's goes with it. A row is never deleted otherwise (a User ends with its
--   account): deleting it and inserting another would move the User to another client.
-- * A User its provider deleted (deleted_at) gets no restore token: the person cannot bring back
--   what the provider ended; the provider (creating it again) or staff (reprovisioning) can.
-- * The trail: account.scim_linked, account.scim_changed and account.scim_unlinked rows about the
--   account, with the client and the userName; an externalId is written there only as "changed" (an
--   erasure blanks the identifiers it knows wherever they appear, and an externalId may be as short
--   as "7").
-- * A change of address made directly (the identity provider's, or psql's) stops the links mailed to
--   the address it leaves, as a confirmed change of address does (tokens/sql/0026_email_change.sql).

CREATE TABLE scim_users (
    account     bigint PRIMARY KEY REFERENCES accounts (id) ON DELETE CASCADE,
    client      bigint NOT NULL REFERENCES api_clients (id),
    user_name   text NOT NULL,
    external_id text,
    -- When the client deleted the User (deprovisioned its account); cleared when the account is
    -- reprovisioned. While it is set, only the client (creating the userName again) or staff restore it.
    deleted_at  timestamptz,
    created_at  timestamptz NOT NULL DEFAULT now(),
    updated_at  timestamptz NOT NULL DEFAULT now()
);
CREATE UNIQUE INDEX scim_users_user_name_key ON scim_users (lower(user_name));
-- A client's Users in id order: what every list and page of /Users reads.
CREATE INDEX scim_users_client_idx ON scim_users (client, account);
CREATE INDEX scim_users_external_id_idx ON scim_users (client, external_id) WHERE external_id IS NOT NULL;

-- What is wrong with a userName or an externalId (NULL when nothing is).
CREATE FUNCTION scim_user_name_problem(user_name text) RETURNS text
    LANGUAGE sql IMMUTABLE PARALLEL SAFE SET search_path = public, pg_temp
AS $$
    SELECT CASE
        WHEN user_name IS NULL OR user_name = '' THEN 'userName must not be empty'
        WHEN user_name <> btrim(user_name) THEN 'userName must not start or end with spaces'
        WHEN length(user_name) > 254 THEN 'userName must be at most 254 characters'
        WHEN user_name ~ '[[:cntrl:]]' THEN 'userName must not hold control characters'
    END
$$;

CREATE FUNCTION scim_external_id_problem(external_id text) RETURNS text
    LANGUAGE sql IMMUTABLE PARALLEL SAFE SET search_path = public, pg_temp
AS $$
    SELECT CASE
        WHEN external_id IS NULL THEN NULL
        WHEN external_id = '' THEN 'externalId must not be empty (leave it out instead)'
        WHEN length(external_id) > 254 THEN 'externalId must be at most 254 characters'
        WHEN external_id ~ '[[:cntrl:]]' THEN 'externalId must not hold control characters'
    END
$$;

CREATE FUNCTION trg_before_scim_user_write() RETURNS trigger
    LANGUAGE plpgsql SET search_path = public, pg_temp
AS $$
DECLARE
    problem text := coalesce(scim_user_name_problem(NEW.user_name), scim_external_id_problem(NEW.external_id));
BEGIN
    IF problem IS NOT NULL THEN
        RAISE EXCEPTION 'accounts: %', problem USING ERRCODE = 'LA012';
    END IF;
    IF TG_OP = 'INSERT' THEN
        IF NOT EXISTS (SELECT FROM api_clients WHERE id = NEW.client AND 'scim' = ANY(scopes) AND revoked_at IS NULL) THEN
            RAISE EXCEPTION 'accounts: API client % does not hold the scope scim; it has no Users', NEW.client
                USING ERRCODE = 'LA012';
        END IF;
        IF EXISTS (SELECT FROM accounts WHERE id = NEW.account AND status IN ('deprovisioned', 'erased')) THEN
            RAISE EXCEPTION 'accounts: account % is deprovisioned or erased; it cannot become a User', NEW.account
                USING ERRCODE = 'LA012';
        END IF;
        NEW.created_at := now();
    ELSIF (NEW.account, NEW.client, NEW.created_at) IS DISTINCT FROM (OLD.account, OLD.client, OLD.created_at) THEN
        RAISE EXCEPTION 'accounts: the User of account % stays its account''s and its client''s', OLD.account
            USING ERRCODE = 'LA012';
    END IF;
    NEW.updated_at := now();
    RETURN NEW;
END;
$$;

CREATE TRIGGER before_scim_user_write
    BEFORE INSERT OR UPDATE ON scim_users
    FOR EACH ROW
    EXECUTE FUNCTION trg_before_scim_user_write();

-- A User ends with its account: deleted by its erasure, or with the account itself (a sign-up never
-- activated, deleted by the cleanup; the account's row is gone by the time its cascade gets here).
CREATE FUNCTION trg_before_scim_user_delete() RETURNS trigger
    LANGUAGE plpgsql SET search_path = public, pg_temp
AS $$
BEGIN
    IF erasure_account() IS NULL AND EXISTS (SELECT FROM accounts WHERE id = OLD.account) THEN
        RAISE EXCEPTION 'accounts: the User of account % ends with its account (deprovisioned, then erased), never by itself', OLD.account
            USING ERRCODE = 'LA012';
    END IF;
    RETURN OLD;
END;
$$;

CREATE TRIGGER before_scim_user_delete
    BEFORE DELETE ON scim_users
    FOR EACH ROW
    EXECUTE FUNCTION trg_before_scim_user_delete();

-- The account's trail. SECURITY DEFINER: the runtime role cannot write audit rows itself. An erasure's
-- deletion of the row writes none: the erasure's own row stands for it, and this one would carry the
-- userName the erasure has just blanked everywhere else.
CREATE FUNCTION trg_after_scim_user_audit() RETURNS trigger
    LANGUAGE plpgsql SECURITY DEFINER SET search_path = public, pg_temp
AS $$
DECLARE
    before jsonb := '{}';
    after jsonb := '{}';
BEGIN
    IF TG_OP = 'DELETE' THEN
        IF erasure_account() IS NULL THEN
            PERFORM audit_record('account.scim_unlinked', 'account', OLD.account::text,
                                 jsonb_build_object('scim_client', OLD.client, 'scim_user_name', OLD.user_name), NULL);
        END IF;
        RETURN NULL;
    END IF;
    IF TG_OP = 'INSERT' THEN
        PERFORM audit_record('account.scim_linked', 'account', NEW.account::text, NULL,
                             jsonb_build_object('scim_client', NEW.client, 'scim_user_name', NEW.user_name,
                                                'scim_external_id', CASE WHEN NEW.external_id IS NOT NULL THEN 'set' END));
        RETURN NULL;
    END IF;
    IF NEW.user_name IS DISTINCT FROM OLD.user_name THEN
        before := before || jsonb_build_object('scim_user_name', OLD.user_name);
        after := after || jsonb_build_object('scim_user_name', NEW.user_name);
    END IF;
    IF NEW.external_id IS DISTINCT FROM OLD.external_id THEN
        before := before || jsonb_build_object('scim_external_id', CASE WHEN OLD.external_id IS NOT NULL THEN 'set' END);
        after := after || jsonb_build_object('scim_external_id',
                                             CASE WHEN NEW.external_id IS NOT NULL THEN 'changed' END);
    END IF;
    IF after <> '{}' THEN
        PERFORM audit_record('account.scim_changed', 'account', NEW.account::text, before, after);
    END IF;
    RETURN NULL;
END;
$$;

CREATE TRIGGER after_scim_user_audit
    AFTER INSERT OR UPDATE OR DELETE ON scim_users
    FOR EACH ROW
    EXECUTE FUNCTION trg_after_scim_user_audit();

-- A reprovisioned account is no longer one its provider deleted.
CREATE FUNCTION trg_after_account_reprovisioned_scim_user() RETURNS trigger
    LANGUAGE plpgsql SET search_path = public, pg_temp
AS $$
BEGIN
    UPDATE scim_users SET deleted_at = NULL WHERE account = NEW.id AND deleted_at IS NOT NULL;
    RETURN NULL;
END;
$$;

CREATE TRIGGER after_account_reprovisioned_scim_user
    AFTER UPDATE OF status ON accounts
    FOR EACH ROW
    WHEN (OLD.status = 'deprovisioned' AND NEW.status = 'provisioned')
    EXECUTE FUNCTION trg_after_account_reprovisioned_scim_user();

-- No restore token for a User its provider deleted (LT013); the pages never ask for one
-- (tokens/services.py, token_request_mail), and a deletion by the provider issues none.
CREATE FUNCTION trg_before_token_restore_scim_user() RETURNS trigger
    LANGUAGE plpgsql SET search_path = public, pg_temp
AS $$
BEGIN
    IF EXISTS (SELECT FROM scim_users WHERE account = NEW.account AND deleted_at IS NOT NULL) THEN
        RAISE EXCEPTION 'tokens: account % was deleted by its identity provider; only the provider or staff restore it', NEW.account
            USING ERRCODE = 'LT013';
    END IF;
    RETURN NEW;
END;
$$;

CREATE TRIGGER before_token_restore_scim_user
    BEFORE INSERT ON tokens
    FOR EACH ROW
    WHEN (NEW.action = 'restore')
    EXECUTE FUNCTION trg_before_token_restore_scim_user();

-- An erased account is nobody's User. SECURITY DEFINER, as the erasure's other steps.
CREATE FUNCTION trg_after_account_erased_scim_user() RETURNS trigger
    LANGUAGE plpgsql SECURITY DEFINER SET search_path = public, pg_temp
AS $$
BEGIN
    DELETE FROM scim_users WHERE account = NEW.id;
    RETURN NULL;
END;
$$;

CREATE TRIGGER after_account_erased_scim_user
    AFTER UPDATE OF status ON accounts
    FOR EACH ROW
    WHEN (NEW.status = 'erased' AND OLD.status IS DISTINCT FROM NEW.status)
    EXECUTE FUNCTION trg_after_account_erased_scim_user();

-- The identifiers an erasure blanks: 0024_erasure.sql's, with the account's userNames, now and
-- earlier, beside its addresses and logins.
CREATE OR REPLACE FUNCTION account_erasure_identifiers(p_account bigint) RETURNS text[]
    LANGUAGE sql STABLE SECURITY DEFINER SET search_path = public, pg_temp
AS $$
    SELECT array_agg(DISTINCT lower(v))
    FROM (
        SELECT email FROM accounts WHERE id = p_account
        UNION ALL SELECT login FROM accounts WHERE id = p_account
        UNION ALL SELECT user_name FROM scim_users WHERE account = p_account
        UNION ALL
        SELECT d ->> k
        FROM audit_events e, LATERAL (VALUES (e.diff_before), (e.diff_after)) AS diffs(d),
             unnest(ARRAY['email', 'login', 'previous_email', 'scim_user_name']) AS k
        WHERE e.resource_type = 'account' AND e.resource_id = p_account::text AND jsonb_typeof(d) = 'object'
        UNION ALL
        SELECT o.payload -> 'data' ->> k
        FROM outbox_events o, unnest(ARRAY['email', 'login', 'previous_email']) AS k
        WHERE o.aggregate_type = 'account' AND o.aggregate_id = p_account::text
    ) found(v)
    WHERE v IS NOT NULL AND v <> '' AND v <> '[erased]'
$$;

-- A change of address made directly: the links mailed to the address it leaves stop working (a
-- recovery, a deletion, a change still waiting for its confirmation, the undo of an earlier change).
-- A confirmed change (tokens/sql/0026_email_change.sql) consumed its own token first, so it is not
-- one of them.
CREATE FUNCTION trg_after_account_email_void_links() RETURNS trigger
    LANGUAGE plpgsql SET search_path = public, pg_temp
AS $$
BEGIN
    UPDATE tokens SET superseded_at = now()
    WHERE account = NEW.id
      AND action IN ('password_recovery', 'deletion', 'email_change', 'email_change_undo')
      AND consumed_at IS NULL AND superseded_at IS NULL;
    RETURN NULL;
END;
$$;

CREATE TRIGGER after_account_email_void_links
    AFTER UPDATE OF email ON accounts
    FOR EACH ROW
    WHEN (NEW.email IS NOT NULL AND lower(NEW.email) IS DISTINCT FROM lower(OLD.email))
    EXECUTE FUNCTION trg_after_account_email_void_links();
