-- The mailroom's queue state on tokens (README, "Mailroom"). Replaces the seed's jobs.last_seq
-- cursor, which skipped tokens that committed out of id order and lost e-mails when the mailer
-- failed after the cursor moved.
--
-- queued    waiting to be mailed while it is due (unexpired, unconsumed, account in the right state)
-- retrying  a transient SMTP failure; due again at mail_next_attempt_at
-- sent      the SMTP server accepted it (mailed_at)
-- dead      a permanent SMTP failure, or too many attempts (mail_error says which)
-- skipped   no longer worth mailing: expired, consumed or replaced before it was sent (mail_error)
CREATE TYPE mail_state AS ENUM ('queued', 'retrying', 'sent', 'dead', 'skipped');

ALTER TABLE tokens
    ADD COLUMN mail_state mail_state NOT NULL DEFAULT 'queued',
    ADD COLUMN mail_attempts smallint NOT NULL DEFAULT 0 CHECK (mail_attempts >= 0),
    ADD COLUMN mail_next_attempt_at timestamptz NOT NULL DEFAULT now(),
    -- A drain run claims a batch by leasing it: other runs leave it alone until the lease ends, so a
    -- run killed mid-batch only delays the rest of its batch.
    ADD COLUMN mail_lease_until timestamptz,
    ADD COLUMN mail_claim uuid,
    ADD COLUMN mailed_at timestamptz,
    ADD COLUMN mail_error text;

-- The claim reads only tokens still to be mailed, unexpired first in expiry order: its cost follows
-- the queue, not the table. It replaces the seed's (id, expires_at, consumed_at, action) index,
-- which served the cursor query.
CREATE INDEX tokens_due_mail_idx ON tokens (expires_at) WHERE mail_state IN ('queued', 'retrying');
DROP INDEX tokens_id_expires_consumed_action_idx;

-- A token consumed or replaced before it was mailed needs no e-mail any more.
CREATE FUNCTION trg_before_token_mail_unneeded() RETURNS trigger
    LANGUAGE plpgsql
AS $$
BEGIN
    NEW.mail_state := 'skipped';
    NEW.mail_error := CASE WHEN NEW.consumed_at IS NOT NULL THEN 'used before it was mailed'
                           ELSE 'replaced by a newer token before it was mailed' END;
    RETURN NEW;
END;
$$;

CREATE TRIGGER before_token_mail_unneeded
    BEFORE UPDATE OF consumed_at, superseded_at ON tokens
    FOR EACH ROW
    WHEN (NEW.mail_state IN ('queued', 'retrying') AND (NEW.consumed_at IS NOT NULL OR NEW.superseded_at IS NOT NULL))
    EXECUTE FUNCTION trg_before_token_mail_unneeded();
