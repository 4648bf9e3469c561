-- A token's identity cannot be rewritten, it is issued unused, and what a person may still change
-- by hand is audited; deleting a token is audited (issue 8, items 7 and 10).
--
-- Before, in psql (as the app's own role), all of these were accepted and left no audit row:
-- UPDATE tokens SET expires_at = now() + interval '1 year', SET account = <another account>,
-- SET code = '12345', SET failed_attempts = 0, SET action = 'password_recovery'; an INSERT of a token
-- already consumed (an activation that never activated its account); DELETE. A transaction that holds
-- the owner's key (platform_events/sql/0005_history_rules.sql) may still rewrite, audited.

CREATE FUNCTION trg_before_token_keep_identity() RETURNS trigger
    LANGUAGE plpgsql SECURITY DEFINER SET search_path = public, pg_temp
AS $$
DECLARE
    diff record := audit_diff(
        jsonb_build_object('account', OLD.account, 'action', OLD.action, 'secret', OLD.secret, 'code', OLD.code,
                           'created_at', OLD.created_at, 'expires_at', OLD.expires_at,
                           'failed_attempts', OLD.failed_attempts, 'superseded_at', OLD.superseded_at),
        jsonb_build_object('account', NEW.account, 'action', NEW.action, 'secret', NEW.secret, 'code', NEW.code,
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

CREATE TRIGGER before_token_keep_identity
    BEFORE UPDATE OF account, action, secret, code, created_at, expires_at, failed_attempts, superseded_at ON tokens
    FOR EACH ROW
    WHEN (NEW.account IS DISTINCT FROM OLD.account OR NEW.action IS DISTINCT FROM OLD.action
          OR NEW.secret IS DISTINCT FROM OLD.secret OR NEW.code IS DISTINCT FROM OLD.code
          OR NEW.created_at IS DISTINCT FROM OLD.created_at OR NEW.expires_at IS DISTINCT FROM OLD.expires_at
          OR NEW.failed_attempts < OLD.failed_attempts
          OR (OLD.superseded_at IS NOT NULL AND NEW.superseded_at IS DISTINCT FROM OLD.superseded_at))
    EXECUTE FUNCTION trg_before_token_keep_identity();

-- A token starts unused, unreplaced, with no wrong code and its e-mail queued: a row inserted as
-- consumed would be an activation that never activated its account, one inserted as mailed an e-mail
-- that never went out.
CREATE FUNCTION trg_before_token_insert_unused() RETURNS trigger
    LANGUAGE plpgsql SECURITY DEFINER SET search_path = public, pg_temp
AS $$
BEGIN
    IF history_rewrite_allowed() THEN
        RETURN NEW;
    END IF;
    RAISE EXCEPTION 'tokens: a token is issued unused: consumed_at, superseded_at, failed_attempts and its mail state are kept by the database'
        USING ERRCODE = 'LT008';
END;
$$;

CREATE TRIGGER before_token_insert_unused
    BEFORE INSERT ON tokens
    FOR EACH ROW
    WHEN (NEW.consumed_at IS NOT NULL OR NEW.superseded_at IS NOT NULL OR NEW.failed_attempts <> 0
          OR NEW.mail_state <> 'queued' OR NEW.mailed_at IS NOT NULL)
    EXECUTE FUNCTION trg_before_token_insert_unused();

-- What may still change after insert, each audited: consumed (token.consumed), a wrong code
-- (token.code_rejected, or token.burnt at the limit), replaced (token.superseded: by a newer token,
-- by hand, or by an insert that never happened: the supersede runs before the insert, so an
-- INSERT ... ON CONFLICT DO NOTHING of a conflicting token replaced the live one with nothing), and a
-- mail state changed other than by the mailroom's own claims and marks (token.mail_changed: the
-- admin's "Retry mailing now", or psql).
CREATE OR REPLACE FUNCTION trg_after_token_update_audit() RETURNS trigger
    LANGUAGE plpgsql SECURITY DEFINER SET search_path = public, pg_temp
AS $$
BEGIN
    IF OLD.consumed_at IS NULL AND NEW.consumed_at IS NOT NULL THEN
        PERFORM audit_record('token.consumed', 'token', NEW.id::text,
                             jsonb_build_object('consumed_at', NULL),
                             jsonb_build_object('account', NEW.account, 'action', NEW.action, 'consumed_at', NEW.consumed_at));
    END IF;
    IF NEW.failed_attempts > OLD.failed_attempts THEN
        PERFORM audit_record(
            CASE WHEN OLD.failed_attempts < tokens_max_code_attempts() AND NEW.failed_attempts >= tokens_max_code_attempts()
                 THEN 'token.burnt' ELSE 'token.code_rejected' END,
            'token', NEW.id::text,
            jsonb_build_object('failed_attempts', OLD.failed_attempts),
            jsonb_build_object('account', NEW.account, 'action', NEW.action, 'failed_attempts', NEW.failed_attempts));
    END IF;
    IF OLD.superseded_at IS NULL AND NEW.superseded_at IS NOT NULL THEN
        PERFORM audit_record('token.superseded', 'token', NEW.id::text,
                             jsonb_build_object('superseded_at', NULL),
                             jsonb_build_object('account', NEW.account, 'action', NEW.action,
                                                'superseded_at', NEW.superseded_at));
    END IF;
    IF NEW.mail_state IS DISTINCT FROM OLD.mail_state AND OLD.mail_claim IS NULL AND NOT (NEW.mail_state = 'skipped'
       AND (NEW.consumed_at IS NOT NULL OR NEW.superseded_at IS NOT NULL OR NEW.expires_at <= now())) THEN
        PERFORM audit_record('token.mail_changed', 'token', NEW.id::text,
                             jsonb_build_object('mail_state', OLD.mail_state, 'mail_next_attempt_at', OLD.mail_next_attempt_at),
                             jsonb_build_object('account', NEW.account, 'mail_state', NEW.mail_state,
                                                'mail_next_attempt_at', NEW.mail_next_attempt_at));
    END IF;
    RETURN NULL;
END;
$$;

-- The WHEN clause repeats the function's tests, so that the mailroom's claims and marks (the hot
-- path: a claim keeps the mail state, a mark ends a claim) run no trigger function.
DROP TRIGGER after_token_update_audit ON tokens;
CREATE TRIGGER after_token_update_audit
    AFTER UPDATE OF consumed_at, failed_attempts, superseded_at, mail_state ON tokens
    FOR EACH ROW
    WHEN ((OLD.consumed_at IS NULL AND NEW.consumed_at IS NOT NULL)
          OR NEW.failed_attempts > OLD.failed_attempts
          OR (OLD.superseded_at IS NULL AND NEW.superseded_at IS NOT NULL)
          OR (NEW.mail_state IS DISTINCT FROM OLD.mail_state AND OLD.mail_claim IS NULL AND NOT (NEW.mail_state = 'skipped'
              AND (NEW.consumed_at IS NOT NULL OR NEW.superseded_at IS NOT NULL OR NEW.expires_at <= now()))))
    EXECUTE FUNCTION trg_after_token_update_audit();

-- token.deleted, once per statement over the deleted rows (an account's tokens go with it).
CREATE FUNCTION trg_after_token_delete_audit() RETURNS trigger
    LANGUAGE plpgsql SECURITY DEFINER SET search_path = public, pg_temp
AS $$
BEGIN
    -- Both aggregates read the rows in the same order, so the arrays line up.
    PERFORM audit_record_many('token.deleted', 'token', array_agg(d.id::text),
                              array_agg(jsonb_build_object('account', d.account, 'action', d.action,
                                                           'consumed_at', d.consumed_at, 'mail_state', d.mail_state)),
                              NULL)
    FROM deleted_tokens d;
    RETURN NULL;
END;
$$;

CREATE TRIGGER after_token_delete_audit
    AFTER DELETE ON tokens
    REFERENCING OLD TABLE AS deleted_tokens
    FOR EACH STATEMENT
    EXECUTE FUNCTION trg_after_token_delete_audit();
