DROP TABLE account_passwords;
DROP FUNCTION trg_after_password_audit();
DROP FUNCTION trg_before_password_change();
