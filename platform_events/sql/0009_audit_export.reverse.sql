DROP INDEX audit_events_deleted_email_idx;
DROP INDEX audit_events_deleted_login_idx;
DROP FUNCTION audit_record_export(text, text, bigint, timestamptz);
