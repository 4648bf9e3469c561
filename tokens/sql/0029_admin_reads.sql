-- Two token reads of the back-office that otherwise walk every token (bench/admin.py, 400,000 tokens).
--
-- The dashboard counts retrying mail (tokens/selectors.py: mail_count): through tokens_due_mail_idx it
-- read every queued token to find the few retrying, 77 ms with 400,000 queued.
CREATE INDEX tokens_retrying_mail_idx ON tokens (id) WHERE mail_state = 'retrying';
-- The token list by state (tokens/selectors.py: TOKEN_STATES): valid, expired and code-blocked tokens
-- are neither used nor replaced, and valid ones expire after now. Most tokens have expired long ago:
-- without it the list read all of them for its few valid ones (150 ms for none).
CREATE INDEX tokens_open_expires_idx ON tokens (expires_at) WHERE consumed_at IS NULL AND superseded_at IS NULL;
