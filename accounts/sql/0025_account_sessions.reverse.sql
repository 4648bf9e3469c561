DROP TRIGGER after_password_sessions_set_or_removed ON account_passwords;
DROP TRIGGER after_password_sessions ON account_passwords;
DROP FUNCTION trg_after_password_sessions();
DROP TRIGGER after_account_status_sessions ON accounts;
DROP FUNCTION trg_after_account_status_sessions();
DROP TABLE account_sessions;
DROP FUNCTION trg_before_account_session_delete();
DROP FUNCTION trg_before_account_session_update();
DROP FUNCTION trg_before_account_session_insert();
