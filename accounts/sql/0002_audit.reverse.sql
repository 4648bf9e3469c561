DROP TRIGGER IF EXISTS after_account_update_audit ON accounts;
DROP TRIGGER IF EXISTS after_account_insert_audit ON accounts;
DROP FUNCTION IF EXISTS trg_after_account_update_audit();
DROP FUNCTION IF EXISTS trg_after_account_insert_audit();
