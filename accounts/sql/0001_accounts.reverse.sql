DROP TABLE IF EXISTS accounts;
DROP FUNCTION IF EXISTS trg_before_account_write_claim_email();
DROP FUNCTION IF EXISTS trg_before_account_status_change();
DROP FUNCTION IF EXISTS trg_before_account_insert_timestamps();
DROP FUNCTION IF EXISTS trg_before_account_validate();
DROP FUNCTION IF EXISTS accounts_login_problem(text);
DROP FUNCTION IF EXISTS accounts_email_problem(text);
DROP TYPE IF EXISTS account_status;
