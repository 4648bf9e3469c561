-- Back to API clients without their maker (0013_api.sql's functions).

-- A revoked key stays revoked, and a client's key is the one it was given: a new key is a new client.
CREATE OR REPLACE FUNCTION trg_before_api_client_update() RETURNS trigger
    LANGUAGE plpgsql SET search_path = public, pg_temp
AS $$
BEGIN
    IF OLD.revoked_at IS NOT NULL AND NEW.revoked_at IS DISTINCT FROM OLD.revoked_at THEN
        RAISE EXCEPTION 'api: client % is revoked; a revoked key cannot be restored (make a new client)', OLD.name
            USING ERRCODE = 'LP005';
    END IF;
    IF NEW.key_hash IS DISTINCT FROM OLD.key_hash OR NEW.key_prefix IS DISTINCT FROM OLD.key_prefix
       OR NEW.created_at IS DISTINCT FROM OLD.created_at THEN
        RAISE EXCEPTION 'api: a client''s key and creation time cannot change (make a new client)'
            USING ERRCODE = 'LP005';
    END IF;
    RETURN NEW;
END;
$$;

-- Staff's changes to a client are audited (api_client.*), never its key; its last use is not.
CREATE OR REPLACE FUNCTION trg_after_api_client_audit() RETURNS trigger
    LANGUAGE plpgsql SECURITY DEFINER SET search_path = public, pg_temp
AS $$
DECLARE
    shown text[] := ARRAY['name', 'key_prefix', 'scopes', 'revoked_at', 'revoked_reason'];
    before jsonb;
    after jsonb;
    diff record;
BEGIN
    IF TG_OP = 'INSERT' THEN
        after := jsonb_strip_nulls((SELECT jsonb_object_agg(key, value) FROM jsonb_each(to_jsonb(NEW)) WHERE key = ANY(shown)));
        PERFORM audit_record('api_client.created', 'api_client', NEW.id::text, NULL, after);
        RETURN NULL;
    END IF;
    before := (SELECT jsonb_object_agg(key, value) FROM jsonb_each(to_jsonb(OLD)) WHERE key = ANY(shown));
    after := (SELECT jsonb_object_agg(key, value) FROM jsonb_each(to_jsonb(NEW)) WHERE key = ANY(shown));
    IF before IS NOT DISTINCT FROM after THEN
        RETURN NULL;  -- its last use: bookkeeping
    END IF;
    diff := audit_diff(before, after);
    PERFORM audit_record(
        CASE WHEN OLD.revoked_at IS NULL AND NEW.revoked_at IS NOT NULL THEN 'api_client.revoked' ELSE 'api_client.changed' END,
        'api_client', NEW.id::text, diff.diff_before, diff.diff_after);
    RETURN NULL;
END;
$$;

ALTER TABLE api_clients DROP COLUMN created_by;
