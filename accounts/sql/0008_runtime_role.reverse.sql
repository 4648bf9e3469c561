ALTER FUNCTION trg_after_account_update_audit() SECURITY INVOKER RESET search_path;
ALTER FUNCTION trg_after_account_insert_audit() SECURITY INVOKER RESET search_path;
