-- The back-office searches accounts by e-mail and login, exactly or by prefix, ignoring case.
-- text_pattern_ops serves both = and LIKE 'prefix%' whatever the database's collation.
DROP INDEX accounts_email_idx;
CREATE INDEX accounts_email_idx ON accounts (lower(email) text_pattern_ops);
CREATE INDEX accounts_login_prefix_idx ON accounts (lower(login) text_pattern_ops);
