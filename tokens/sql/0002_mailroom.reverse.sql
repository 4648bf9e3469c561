DROP TRIGGER IF EXISTS before_token_mail_unneeded ON tokens;
DROP FUNCTION IF EXISTS trg_before_token_mail_unneeded();
CREATE INDEX tokens_id_expires_consumed_action_idx ON tokens (id, expires_at, consumed_at, action);
DROP INDEX IF EXISTS tokens_due_mail_idx;
ALTER TABLE tokens
    DROP COLUMN mail_state,
    DROP COLUMN mail_attempts,
    DROP COLUMN mail_next_attempt_at,
    DROP COLUMN mail_lease_until,
    DROP COLUMN mail_claim,
    DROP COLUMN mailed_at,
    DROP COLUMN mail_error;
DROP TYPE IF EXISTS mail_state;
