-- The erasure's identifiers as 0024_erasure.sql has them, first: the function reads scim_users.
CREATE OR REPLACE FUNCTION account_erasure_identifiers(p_account bigint) RETURNS text[]
    LANGUAGE sql STABLE SECURITY DEFINER SET search_path = public, pg_temp
AS $$
    SELECT array_agg(DISTINCT lower(v))
    FROM (
        SELECT email FROM accounts WHERE id = p_account
        UNION ALL SELECT login FROM accounts WHERE id = p_account
        UNION ALL
        SELECT d ->> k
        FROM audit_events e, LATERAL (VALUES (e.diff_before), (e.diff_after)) AS diffs(d),
             unnest(ARRAY['email', 'login', 'previous_email']) AS k
        WHERE e.resource_type = 'account' AND e.resource_id = p_account::text AND jsonb_typeof(d) = 'object'
        UNION ALL
        SELECT o.payload -> 'data' ->> k
        FROM outbox_events o, unnest(ARRAY['email', 'login', 'previous_email']) AS k
        WHERE o.aggregate_type = 'account' AND o.aggregate_id = p_account::text
    ) found(v)
    WHERE v IS NOT NULL AND v <> '' AND v <> '[erased]'
$$;


DROP TRIGGER IF EXISTS after_account_email_void_links ON accounts;
DROP FUNCTION IF EXISTS trg_after_account_email_void_links();
DROP TRIGGER IF EXISTS before_token_restore_scim_user ON tokens;
DROP FUNCTION IF EXISTS trg_before_token_restore_scim_user();
DROP TRIGGER IF EXISTS after_account_reprovisioned_scim_user ON accounts;
DROP FUNCTION IF EXISTS trg_after_account_reprovisioned_scim_user();
DROP TRIGGER IF EXISTS after_account_erased_scim_user ON accounts;
DROP FUNCTION IF EXISTS trg_after_account_erased_scim_user();
DROP TABLE IF EXISTS scim_users;
DROP FUNCTION IF EXISTS trg_after_scim_user_audit();
DROP FUNCTION IF EXISTS trg_before_scim_user_delete();
DROP FUNCTION IF EXISTS trg_before_scim_user_write();
DROP FUNCTION IF EXISTS scim_external_id_problem(text);
DROP FUNCTION IF EXISTS scim_user_name_problem(text);
