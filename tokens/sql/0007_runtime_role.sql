-- The token audit triggers write the trail as the owner: the runtime role has no INSERT on it
-- (platform_events/sql/0004_runtime_role.sql). A fixed search_path, as every SECURITY DEFINER needs.
ALTER FUNCTION trg_after_token_insert_audit() SECURITY DEFINER SET search_path = public, pg_temp;
ALTER FUNCTION trg_after_token_update_audit() SECURITY DEFINER SET search_path = public, pg_temp;
