-- Every function of the schema resolves names in public, then pg_temp, whatever the caller's
-- search_path (issue 8). Without it a session could put a temporary table named like one of ours
-- first on its search_path (SET search_path = pg_temp, public) and the functions would read or write
-- the fake. The SECURITY DEFINER ones had it already; these are the rest of this app's, and
-- tests/platform_events/db/test_search_path.py checks that no function of the schema lacks it.
ALTER FUNCTION set_updated_at() SET search_path = public, pg_temp;
ALTER FUNCTION audit_setting(text) SET search_path = public, pg_temp;
ALTER FUNCTION audit_actor() SET search_path = public, pg_temp;
ALTER FUNCTION audit_diff(jsonb, jsonb) SET search_path = public, pg_temp;
ALTER FUNCTION audit_record(text, text, text, jsonb, jsonb) SET search_path = public, pg_temp;
ALTER FUNCTION audit_record_many(text, text, text[], jsonb[], jsonb[]) SET search_path = public, pg_temp;
ALTER FUNCTION trg_audit_events_append_only() SET search_path = public, pg_temp;
