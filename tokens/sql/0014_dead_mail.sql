-- Dead mail, counted on the dashboard and listed by the token list's mail-state filter (issue 11):
-- rare rows among all tokens kept for 90 days, so a partial index makes both cost what is dead, not
-- a scan of the table. By id, the order of the token list.
CREATE INDEX tokens_dead_mail_idx ON tokens (id) WHERE mail_state = 'dead';
