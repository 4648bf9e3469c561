DROP FUNCTION tokens_digest_mailed(bigint[], bytea[], text);
DROP FUNCTION tokens_mark_sent(bigint, uuid, bytea, text);

CREATE OR REPLACE TRIGGER before_token_keep_identity
    BEFORE UPDATE OF id, account, action, secret, code, created_at, expires_at, failed_attempts, superseded_at ON tokens
    FOR EACH ROW
    WHEN (NEW.id IS DISTINCT FROM OLD.id OR NEW.account IS DISTINCT FROM OLD.account OR NEW.action IS DISTINCT FROM OLD.action
          OR NEW.secret IS DISTINCT FROM OLD.secret OR NEW.code IS DISTINCT FROM OLD.code
          OR NEW.created_at IS DISTINCT FROM OLD.created_at OR NEW.expires_at IS DISTINCT FROM OLD.expires_at
          OR NEW.failed_attempts < OLD.failed_attempts
          OR (OLD.superseded_at IS NOT NULL AND NEW.superseded_at IS DISTINCT FROM OLD.superseded_at))
    EXECUTE FUNCTION trg_before_token_keep_identity();

DROP TRIGGER before_token_keep_digests ON tokens;
DROP FUNCTION trg_before_token_keep_digests();
DROP TRIGGER before_token_insert_digest ON tokens;
DROP FUNCTION trg_before_token_insert_digest();
DROP FUNCTION tokens_as_owner();

-- A digested token has no plain values to give back: it cannot be used any more, so it goes.
DELETE FROM tokens WHERE secret IS NULL;
ALTER TABLE tokens
    DROP CONSTRAINT tokens_plain_or_digested_check,
    DROP COLUMN code_digest_key,
    DROP COLUMN code_digest,
    DROP COLUMN secret_digest,
    ALTER COLUMN code SET NOT NULL,
    ALTER COLUMN secret SET NOT NULL;
