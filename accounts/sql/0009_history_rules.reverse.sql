DROP TRIGGER after_account_delete_audit ON accounts;
DROP FUNCTION trg_after_account_delete_audit();
DROP TRIGGER before_account_keep_history ON accounts;
DROP FUNCTION trg_before_account_keep_history();
