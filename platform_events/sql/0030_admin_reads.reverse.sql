DROP INDEX audit_events_id_idx;
DROP INDEX audit_events_staff_actions_idx;
