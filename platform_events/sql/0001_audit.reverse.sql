DROP TABLE IF EXISTS audit_events CASCADE;
DROP FUNCTION IF EXISTS trg_audit_events_append_only();
DROP FUNCTION IF EXISTS audit_diff(jsonb, jsonb);
DROP FUNCTION IF EXISTS audit_record(text, text, text, jsonb, jsonb);
DROP FUNCTION IF EXISTS audit_actor();
DROP FUNCTION IF EXISTS audit_setting(text);
DROP FUNCTION IF EXISTS audit_ensure_partition(date);
DROP FUNCTION IF EXISTS set_updated_at();
