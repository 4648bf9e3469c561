ALTER FUNCTION trg_after_token_update_audit() SECURITY INVOKER RESET search_path;
ALTER FUNCTION trg_after_token_insert_audit() SECURITY INVOKER RESET search_path;
