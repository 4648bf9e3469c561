ALTER FUNCTION trg_audit_events_append_only() RESET search_path;
ALTER FUNCTION audit_record_many(text, text, text[], jsonb[], jsonb[]) RESET search_path;
ALTER FUNCTION audit_record(text, text, text, jsonb, jsonb) RESET search_path;
ALTER FUNCTION audit_diff(jsonb, jsonb) RESET search_path;
ALTER FUNCTION audit_actor() RESET search_path;
ALTER FUNCTION audit_setting(text) RESET search_path;
ALTER FUNCTION set_updated_at() RESET search_path;
