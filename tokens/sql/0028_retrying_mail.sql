-- The dashboard counts retrying mail (tokens/selectors.py: mail_count): through tokens_due_mail_idx it
-- read every queued token to find the few retrying, 77 ms with 400,000 queued (bench/admin.py).
CREATE INDEX tokens_retrying_mail_idx ON tokens (id) WHERE mail_state = 'retrying';
