DROP TABLE IF EXISTS accounts;
DROP FUNCTION IF EXISTS trg_before_account_write();
DROP FUNCTION IF EXISTS trg_before_account_status_change();
DROP FUNCTION IF EXISTS accounts_login_problem(text);
DROP FUNCTION IF EXISTS accounts_email_problem(text);
DROP TYPE IF EXISTS account_status;
