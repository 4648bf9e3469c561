-- Credentials at rest. A token's link secret and code stay in its row only until its e-mail has gone
-- out: the statement that marks it sent (tokens_mark_sent) also empties both and keeps digests, so a
-- backup, a replica or a read-only login holds no working link or code of a mailed token.
--
-- secret_digest  sha256(secret), written by the database when the token is inserted (256 random bits
--                need no key); links are looked up by it alone, before and after the mail.
-- code_digest    HMAC-SHA256 of the code under a key the database does not hold (TOKEN_DIGEST_KEYS;
--                100,000 codes would be reversed at once from an unkeyed digest), computed by the
--                mailroom and written by tokens_mark_sent with the key's id (code_digest_key).
ALTER TABLE tokens
    ALTER COLUMN secret DROP NOT NULL,
    ALTER COLUMN code DROP NOT NULL,
    ADD COLUMN secret_digest bytea CONSTRAINT tokens_secret_digest_check CHECK (length(secret_digest) = 32),
    ADD COLUMN code_digest bytea CONSTRAINT tokens_code_digest_check CHECK (length(code_digest) = 32),
    ADD COLUMN code_digest_key text CONSTRAINT tokens_code_digest_key_check CHECK (code_digest_key ~ '^[A-Za-z0-9_.-]{1,64}$'),
    -- Plain values, or (once mailed) digests only: never half of each.
    ADD CONSTRAINT tokens_plain_or_digested_check CHECK (
        (secret IS NOT NULL AND code IS NOT NULL AND code_digest IS NULL AND code_digest_key IS NULL)
        OR (secret IS NULL AND code IS NULL AND code_digest IS NOT NULL AND code_digest_key IS NOT NULL));

-- Whether the running statement acts as the owner of the tokens table: a SECURITY DEFINER function of
-- the owner's (tokens_mark_sent), a migration, or the owner's own login; never the runtime role.
CREATE FUNCTION tokens_as_owner() RETURNS boolean
    LANGUAGE sql STABLE
    SET search_path = public, pg_temp
AS $$ SELECT current_user = pg_get_userbyid(relowner) FROM pg_class WHERE oid = 'public.tokens'::regclass $$;

-- The secret's digest is the database's to write: whatever an INSERT says, it is sha256(secret). A
-- token is inserted with its plain values; only the owner may insert one already digested (a restore).
CREATE FUNCTION trg_before_token_insert_digest() RETURNS trigger
    LANGUAGE plpgsql
    SET search_path = public, pg_temp
AS $$
BEGIN
    IF NEW.secret IS NOT NULL THEN
        NEW.secret_digest := sha256(NEW.secret);
    END IF;
    IF (NEW.secret IS NULL OR NEW.code_digest IS NOT NULL OR NEW.code_digest_key IS NOT NULL) AND NOT tokens_as_owner() THEN
        RAISE EXCEPTION 'tokens: a token is issued with its link secret and code; their digests are written by the database and the mailroom''s sent-mark'
            USING ERRCODE = 'LT008';
    END IF;
    RETURN NEW;
END;
$$;

CREATE TRIGGER before_token_insert_digest
    BEFORE INSERT ON tokens
    FOR EACH ROW
    EXECUTE FUNCTION trg_before_token_insert_digest();

-- The digests change only in tokens_mark_sent (as the owner), and a mailed token is never mailed again:
-- its plain values are gone, so re-sending means a new token.
CREATE FUNCTION trg_before_token_keep_digests() RETURNS trigger
    LANGUAGE plpgsql
    SET search_path = public, pg_temp
AS $$
BEGIN
    IF (NEW.secret_digest IS DISTINCT FROM OLD.secret_digest OR NEW.code_digest IS DISTINCT FROM OLD.code_digest
        OR NEW.code_digest_key IS DISTINCT FROM OLD.code_digest_key) AND NOT tokens_as_owner() THEN
        RAISE EXCEPTION 'tokens: the digests of token %''s link and code are written only when its e-mail is marked sent (tokens_mark_sent)', OLD.id
            USING ERRCODE = 'LT007';
    END IF;
    IF OLD.code_digest IS NOT NULL AND NEW.mail_state IN ('queued', 'retrying') THEN
        RAISE EXCEPTION 'tokens: token % was mailed and only digests of its link and code are kept, so it cannot be mailed again; issue a new token', OLD.id
            USING ERRCODE = 'LT007';
    END IF;
    RETURN NEW;
END;
$$;

CREATE TRIGGER before_token_keep_digests
    BEFORE UPDATE OF secret_digest, code_digest, code_digest_key, mail_state ON tokens
    FOR EACH ROW
    WHEN (NEW.secret_digest IS DISTINCT FROM OLD.secret_digest OR NEW.code_digest IS DISTINCT FROM OLD.code_digest
          OR NEW.code_digest_key IS DISTINCT FROM OLD.code_digest_key
          OR (OLD.code_digest IS NOT NULL AND NEW.mail_state IN ('queued', 'retrying')))
    EXECUTE FUNCTION trg_before_token_keep_digests();

-- A token's secret and code are part of its fixed identity, except that they go, once, in the statement
-- that writes the code's digest (the sent-mark).
CREATE OR REPLACE TRIGGER before_token_keep_identity
    BEFORE UPDATE OF id, account, action, secret, code, created_at, expires_at, failed_attempts, superseded_at ON tokens
    FOR EACH ROW
    WHEN (NEW.id IS DISTINCT FROM OLD.id OR NEW.account IS DISTINCT FROM OLD.account OR NEW.action IS DISTINCT FROM OLD.action
          OR (NEW.secret IS DISTINCT FROM OLD.secret AND NOT (NEW.secret IS NULL AND OLD.code_digest IS NULL AND NEW.code_digest IS NOT NULL))
          OR (NEW.code IS DISTINCT FROM OLD.code AND NOT (NEW.code IS NULL AND OLD.code_digest IS NULL AND NEW.code_digest IS NOT NULL))
          OR NEW.created_at IS DISTINCT FROM OLD.created_at OR NEW.expires_at IS DISTINCT FROM OLD.expires_at
          OR NEW.failed_attempts < OLD.failed_attempts
          OR (OLD.superseded_at IS NOT NULL AND NEW.superseded_at IS DISTINCT FROM OLD.superseded_at))
    EXECUTE FUNCTION trg_before_token_keep_identity();

-- The mailroom's sent-mark: the run holding the token's claim records it sent, and in the same
-- statement empties its secret and code and keeps the code's digest (HMAC-SHA256 under the key
-- ``p_key_id``, computed by the mailroom, which holds the key). Returns the token's id, or nothing when
-- the run no longer holds its claim. Runs as the owner: the runtime role writes no digest itself.
CREATE FUNCTION tokens_mark_sent(p_id bigint, p_claim uuid, p_code_digest bytea, p_key_id text) RETURNS SETOF bigint
    LANGUAGE sql SECURITY DEFINER
    SET search_path = public, pg_temp
AS $$
    UPDATE tokens
    SET mail_state = 'sent', mailed_at = now(), mail_lease_until = NULL, mail_claim = NULL, mail_error = NULL,
        secret = NULL, code = NULL, code_digest = p_code_digest, code_digest_key = p_key_id
    WHERE id = p_id AND mail_claim = p_claim AND code_digest IS NULL
    RETURNING id
$$;

-- Used by the data migration that digests the tokens mailed before: as tokens_mark_sent, without a claim.
CREATE FUNCTION tokens_digest_mailed(p_ids bigint[], p_code_digests bytea[], p_key_id text) RETURNS integer
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path = public, pg_temp
AS $$
DECLARE
    changed integer;
BEGIN
    UPDATE tokens t
    SET secret = NULL, code = NULL, code_digest = d.digest, code_digest_key = p_key_id
    FROM unnest(p_ids, p_code_digests) AS d(id, digest)
    WHERE t.id = d.id AND t.code_digest IS NULL AND t.mail_state = 'sent';
    GET DIAGNOSTICS changed = ROW_COUNT;
    RETURN changed;
END;
$$;
REVOKE ALL ON FUNCTION tokens_digest_mailed(bigint[], bytea[], text) FROM PUBLIC;
