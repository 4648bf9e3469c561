DROP INDEX tokens_due_mail_idx;
CREATE INDEX tokens_due_mail_idx ON tokens (expires_at) WHERE mail_state IN ('queued', 'retrying');
