-- The extension stays: it may have been installed before this migration, and other objects may use it.
DROP INDEX IF EXISTS accounts_login_trgm_idx;
DROP INDEX IF EXISTS accounts_email_domain_trgm_idx;
DROP INDEX IF EXISTS accounts_email_local_trgm_idx;
