-- The audit trail's column list in one place: audit_record_many() writes the rows of one action for
-- many resources at once (what the statement-level triggers of accounts and tokens need), and
-- audit_record() now writes its one row through it. Before, those triggers repeated the list.
CREATE FUNCTION audit_record_many(action text, resource_type text, resource_ids text[], diffs_before jsonb[],
                                  diffs_after jsonb[])
    RETURNS void
    LANGUAGE sql
AS $$
    INSERT INTO audit_events (actor_type, actor_id, actor_display, actor_ip, actor_user_agent, reason, correlation_id,
                              request_id, action, resource_type, resource_id, diff_before, diff_after)
    SELECT a.*, audit_record_many.action, audit_record_many.resource_type, r.resource_id, r.diff_before, r.diff_after
    -- A NULL array counts as empty: unnest pads it with NULLs beside the others.
    FROM audit_actor() a, unnest(resource_ids, diffs_before, diffs_after) AS r(resource_id, diff_before, diff_after)
$$;

CREATE OR REPLACE FUNCTION audit_record(action text, resource_type text, resource_id text, diff_before jsonb,
                                        diff_after jsonb)
    RETURNS void
    LANGUAGE sql
AS $$
    SELECT audit_record_many(action, resource_type, ARRAY[resource_id], ARRAY[diff_before], ARRAY[diff_after])
$$;
