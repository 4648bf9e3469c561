-- The client API (issue 13; seed 004's idempotency_keys): API clients and their idempotency keys.
-- README, "Client API".
--
-- Where this differs from seed 004, and why:
-- * idempotency_keys is keyed on (client_id, key), not key alone: keys are chosen by the clients,
--   so one client's key must neither replay another client's response nor be refused for it.
-- * A key is either running (lease_claim and lease_until set) or finished (response_status set),
--   never both, never neither. The lease lets a retry take over the key of a request that died
--   before it finished; a finished response was stored in the transaction of its effect, so a key
--   with no response has no effect behind it.
-- * The seed's format (32-128 of [A-Za-z0-9_-]) is checked here as well as by the API, and a finished
--   key cannot be reopened, changed or deleted before it expires (trg_before_idempotency_key_change).
-- * request_hash is an HMAC keyed with the application's secret, not a plain SHA-256: the body it
--   stands for may hold a password, which a plain digest would let anyone with the table confirm
--   with one hash per guess.

CREATE TABLE api_clients (
    id             bigint       GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    name           varchar(100) NOT NULL,
    -- The key's first characters, shown to staff to tell keys apart; the key itself is never stored.
    key_prefix     varchar(16)  NOT NULL UNIQUE,
    -- SHA-256 of the whole key. Keys are 256 random bits, so a fast digest cannot be reversed by
    -- guessing (a slow password hash would cost every request tens of milliseconds for nothing).
    key_hash       bytea        NOT NULL UNIQUE CHECK (octet_length(key_hash) = 32),
    scopes         text[]       NOT NULL,
    created_at     timestamptz  NOT NULL DEFAULT now(),
    last_used_at   timestamptz,
    revoked_at     timestamptz,
    revoked_reason text,

    -- A name is printed in the audit trail as the acting party: plain, and unique ignoring case.
    CONSTRAINT ck_api_clients_name CHECK (name ~ '^[A-Za-z0-9][A-Za-z0-9._ -]*$' AND name = btrim(name)),
    CONSTRAINT ck_api_clients_scopes CHECK (
        cardinality(scopes) > 0 AND scopes <@ ARRAY['accounts:read', 'accounts:write', 'sessions']::text[]),
    CONSTRAINT ck_api_clients_revoked CHECK (
        (revoked_at IS NULL) = (revoked_reason IS NULL) AND btrim(coalesce(revoked_reason, 'x')) <> '')
);
CREATE UNIQUE INDEX api_clients_name_key ON api_clients (lower(name));

-- A revoked key stays revoked, and a client's key is the one it was given: a new key is a new client.
CREATE FUNCTION trg_before_api_client_update() RETURNS trigger
    LANGUAGE plpgsql SET search_path = public, pg_temp
AS $$
BEGIN
    IF OLD.revoked_at IS NOT NULL AND NEW.revoked_at IS DISTINCT FROM OLD.revoked_at THEN
        RAISE EXCEPTION 'api: client % is revoked; a revoked key cannot be restored (make a new client)', OLD.name
            USING ERRCODE = 'LP005';
    END IF;
    IF NEW.key_hash IS DISTINCT FROM OLD.key_hash OR NEW.key_prefix IS DISTINCT FROM OLD.key_prefix
       OR NEW.created_at IS DISTINCT FROM OLD.created_at THEN
        RAISE EXCEPTION 'api: a client''s key and creation time cannot change (make a new client)'
            USING ERRCODE = 'LP005';
    END IF;
    RETURN NEW;
END;
$$;

CREATE TRIGGER before_api_client_update
    BEFORE UPDATE ON api_clients
    FOR EACH ROW
    EXECUTE FUNCTION trg_before_api_client_update();

-- A client is never deleted: deleted and inserted again, a revoked key would work again (its hash is
-- unique only among the rows there are), and the audit trail names clients by id.
CREATE FUNCTION trg_before_api_client_delete() RETURNS trigger
    LANGUAGE plpgsql SET search_path = public, pg_temp
AS $$
BEGIN
    RAISE EXCEPTION 'api: API clients are never deleted; revoke the key instead' USING ERRCODE = 'LP005';
END;
$$;

CREATE TRIGGER before_api_client_delete
    BEFORE DELETE ON api_clients
    FOR EACH ROW
    EXECUTE FUNCTION trg_before_api_client_delete();

-- Staff's changes to a client are audited (api_client.*), never its key; its last use is not.
CREATE FUNCTION trg_after_api_client_audit() RETURNS trigger
    LANGUAGE plpgsql SECURITY DEFINER SET search_path = public, pg_temp
AS $$
DECLARE
    shown text[] := ARRAY['name', 'key_prefix', 'scopes', 'revoked_at', 'revoked_reason'];
    before jsonb;
    after jsonb;
    diff record;
BEGIN
    IF TG_OP = 'INSERT' THEN
        after := jsonb_strip_nulls((SELECT jsonb_object_agg(key, value) FROM jsonb_each(to_jsonb(NEW)) WHERE key = ANY(shown)));
        PERFORM audit_record('api_client.created', 'api_client', NEW.id::text, NULL, after);
        RETURN NULL;
    END IF;
    before := (SELECT jsonb_object_agg(key, value) FROM jsonb_each(to_jsonb(OLD)) WHERE key = ANY(shown));
    after := (SELECT jsonb_object_agg(key, value) FROM jsonb_each(to_jsonb(NEW)) WHERE key = ANY(shown));
    IF before IS NOT DISTINCT FROM after THEN
        RETURN NULL;  -- its last use: bookkeeping
    END IF;
    diff := audit_diff(before, after);
    PERFORM audit_record(
        CASE WHEN OLD.revoked_at IS NULL AND NEW.revoked_at IS NOT NULL THEN 'api_client.revoked' ELSE 'api_client.changed' END,
        'api_client', NEW.id::text, diff.diff_before, diff.diff_after);
    RETURN NULL;
END;
$$;

CREATE TRIGGER after_api_client_audit
    AFTER INSERT OR UPDATE ON api_clients
    FOR EACH ROW
    EXECUTE FUNCTION trg_after_api_client_audit();

CREATE TABLE idempotency_keys (
    client_id       bigint       NOT NULL REFERENCES api_clients (id),
    key             varchar(128) NOT NULL CHECK (key ~ '^[A-Za-z0-9_-]{32,128}$'),
    -- HMAC-SHA256 hex of the request: method, path and body (platform_events/api/idempotency.py).
    request_hash    varchar(64)  NOT NULL CHECK (request_hash ~ '^[0-9a-f]{64}$'),
    response_status int          CHECK (response_status BETWEEN 200 AND 499),
    response_body   jsonb,
    lease_claim     uuid,
    lease_until     timestamptz,
    created_at      timestamptz  NOT NULL DEFAULT now(),
    expires_at      timestamptz  NOT NULL DEFAULT now() + interval '24 hours',
    PRIMARY KEY (client_id, key),
    CONSTRAINT ck_idempotency_keys_state CHECK (
        CASE WHEN response_status IS NULL
             THEN lease_claim IS NOT NULL AND lease_until IS NOT NULL AND response_body IS NULL
             ELSE lease_claim IS NULL AND lease_until IS NULL AND response_body IS NOT NULL END)
);
-- Retention deletes expired keys, oldest first (manage.py cleanup).
CREATE INDEX idempotency_keys_expires ON idempotency_keys (expires_at);

-- A finished key is its promise: the effect happened and this is its answer. Until it expires nobody
-- reopens it (a retry would run the work again), changes its answer or deletes it. A running key
-- may be finished, released or taken over; an expired one reused or swept.
CREATE FUNCTION trg_before_idempotency_key_change() RETURNS trigger
    LANGUAGE plpgsql SET search_path = public, pg_temp
AS $$
BEGIN
    IF OLD.response_status IS NOT NULL AND OLD.expires_at > now() THEN
        RAISE EXCEPTION 'api: a finished Idempotency-Key is kept as it is until it expires (%)', OLD.expires_at
            USING ERRCODE = 'LP006';
    END IF;
    RETURN CASE WHEN TG_OP = 'DELETE' THEN OLD ELSE NEW END;
END;
$$;

CREATE TRIGGER before_idempotency_key_change
    BEFORE UPDATE OR DELETE ON idempotency_keys
    FOR EACH ROW
    EXECUTE FUNCTION trg_before_idempotency_key_change();

-- A call made with an API client's key is audited as a service: actor_id api-client:<id>
-- (platform_events/audit.py). The rest as 0004_runtime_role.sql left it.
CREATE OR REPLACE FUNCTION audit_actor()
    RETURNS TABLE (actor_type varchar, actor_id varchar, actor_display varchar, actor_ip inet,
                   actor_user_agent text, reason text, correlation_id uuid, request_id uuid)
    LANGUAGE sql STABLE SET search_path = public, pg_temp
AS $$
    SELECT CASE WHEN audit_setting('actor_id') IS NULL THEN 'SYSTEM'
                WHEN audit_setting('actor_id') LIKE 'api-client:%' THEN 'SERVICE'
                ELSE 'USER' END,
           coalesce(audit_setting('actor_id'), session_user),
           coalesce(audit_setting('actor_display'), session_user),
           audit_setting('actor_ip')::inet,
           audit_setting('actor_user_agent'),
           audit_setting('reason'),
           audit_setting('correlation_id')::uuid,
           audit_setting('request_id')::uuid
$$;
