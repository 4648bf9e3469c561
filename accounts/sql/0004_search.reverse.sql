DROP INDEX IF EXISTS accounts_login_prefix_idx;
DROP INDEX IF EXISTS accounts_email_idx;
CREATE INDEX accounts_email_idx ON accounts (lower(email));
