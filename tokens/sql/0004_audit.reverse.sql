DROP TRIGGER IF EXISTS after_token_update_audit ON tokens;
DROP TRIGGER IF EXISTS after_token_insert_audit ON tokens;
DROP FUNCTION IF EXISTS trg_after_token_update_audit();
DROP FUNCTION IF EXISTS trg_after_token_insert_audit();
