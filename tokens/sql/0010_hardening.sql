-- Two gaps an attack on the history rules of 0008 found (issue 8; accounts/sql/0010_hardening.sql
-- has the account side).
--
-- 1. The functions below had no fixed search_path: with a temporary table named accounts or tokens
--    first on the search_path, the triggers read and wrote the fake (a recovery token of a suspended
--    account was consumed that way). They now resolve names in public, then pg_temp.
-- 2. A token's id could change (swapped with another token's in one transaction), so the trail's
--    rows no longer named the token they were about: the id is now part of its fixed identity.

ALTER FUNCTION lifecycle_random_code() SET search_path = public, pg_temp;
ALTER FUNCTION tokens_max_code_attempts() SET search_path = public, pg_temp;
ALTER FUNCTION trg_after_account_insert() SET search_path = public, pg_temp;
ALTER FUNCTION trg_before_token_insert() SET search_path = public, pg_temp;
ALTER FUNCTION trg_before_token_consume() SET search_path = public, pg_temp;
ALTER FUNCTION trg_after_token_consumed() SET search_path = public, pg_temp;
ALTER FUNCTION trg_after_token_inserted() SET search_path = public, pg_temp;
ALTER FUNCTION trg_before_token_mail_unneeded() SET search_path = public, pg_temp;

CREATE OR REPLACE FUNCTION trg_before_token_keep_identity() RETURNS trigger
    LANGUAGE plpgsql SECURITY DEFINER SET search_path = public, pg_temp
AS $$
DECLARE
    diff record := audit_diff(
        jsonb_build_object('id', OLD.id, 'account', OLD.account, 'action', OLD.action, 'secret', OLD.secret, 'code', OLD.code,
                           'created_at', OLD.created_at, 'expires_at', OLD.expires_at,
                           'failed_attempts', OLD.failed_attempts, 'superseded_at', OLD.superseded_at),
        jsonb_build_object('id', NEW.id, 'account', NEW.account, 'action', NEW.action, 'secret', NEW.secret, 'code', NEW.code,
                           'created_at', NEW.created_at, 'expires_at', NEW.expires_at,
                           'failed_attempts', NEW.failed_attempts, 'superseded_at', NEW.superseded_at));
BEGIN
    IF NOT history_rewrite_allowed() THEN
        RAISE EXCEPTION 'tokens: % of token % cannot be changed: a token''s identity is fixed when it is issued, its wrong-code count only grows and a replaced token stays replaced',
            (SELECT string_agg(field, ', ' ORDER BY field) FROM jsonb_object_keys(diff.diff_after) field), OLD.id
            USING ERRCODE = 'LT007';
    END IF;
    -- The trail says that the secret or the code changed, never what they are.
    PERFORM audit_record('token.history_rewritten', 'token', OLD.id::text,
                         (SELECT jsonb_object_agg(field, CASE WHEN field IN ('secret', 'code') THEN '"(hidden)"' ELSE value END)
                          FROM jsonb_each(diff.diff_before) AS d(field, value)),
                         (SELECT jsonb_object_agg(field, CASE WHEN field IN ('secret', 'code') THEN '"(hidden)"' ELSE value END)
                          FROM jsonb_each(diff.diff_after) AS d(field, value)));
    RETURN NEW;
END;
$$;

CREATE OR REPLACE TRIGGER before_token_keep_identity
    BEFORE UPDATE OF id, account, action, secret, code, created_at, expires_at, failed_attempts, superseded_at ON tokens
    FOR EACH ROW
    WHEN (NEW.id IS DISTINCT FROM OLD.id OR NEW.account IS DISTINCT FROM OLD.account OR NEW.action IS DISTINCT FROM OLD.action
          OR NEW.secret IS DISTINCT FROM OLD.secret OR NEW.code IS DISTINCT FROM OLD.code
          OR NEW.created_at IS DISTINCT FROM OLD.created_at OR NEW.expires_at IS DISTINCT FROM OLD.expires_at
          OR NEW.failed_attempts < OLD.failed_attempts
          OR (OLD.superseded_at IS NOT NULL AND NEW.superseded_at IS DISTINCT FROM OLD.superseded_at))
    EXECUTE FUNCTION trg_before_token_keep_identity();
