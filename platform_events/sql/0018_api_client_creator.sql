-- Who made an API client: the staff login that minted its key, kept with it for good, so that each
-- act of the client names the person behind it in the audit trail (its actor_display is "<client>,
-- made by <login>", platform_events/api/models.py). NULL: made at the command line by an operator
-- (manage.py add_api_client), who holds the database anyway.

ALTER TABLE api_clients ADD COLUMN created_by varchar(150)
    CONSTRAINT ck_api_clients_created_by CHECK (created_by IS NULL OR btrim(created_by) <> '');

-- A revoked key stays revoked, and a client's key and maker are the ones it was given: a new key is a
-- new client.
CREATE OR REPLACE FUNCTION trg_before_api_client_update() RETURNS trigger
    LANGUAGE plpgsql SET search_path = public, pg_temp
AS $$
BEGIN
    IF OLD.revoked_at IS NOT NULL AND NEW.revoked_at IS DISTINCT FROM OLD.revoked_at THEN
        RAISE EXCEPTION 'api: client % is revoked; a revoked key cannot be restored (make a new client)', OLD.name
            USING ERRCODE = 'LP005';
    END IF;
    IF NEW.key_hash IS DISTINCT FROM OLD.key_hash OR NEW.key_prefix IS DISTINCT FROM OLD.key_prefix
       OR NEW.created_at IS DISTINCT FROM OLD.created_at OR NEW.created_by IS DISTINCT FROM OLD.created_by THEN
        RAISE EXCEPTION 'api: a client''s key, maker and creation time cannot change (make a new client)'
            USING ERRCODE = 'LP005';
    END IF;
    RETURN NEW;
END;
$$;

-- Staff's changes to a client are audited (api_client.*), never its key; its last use is not. Its
-- maker is in the row of its creation.
CREATE OR REPLACE FUNCTION trg_after_api_client_audit() RETURNS trigger
    LANGUAGE plpgsql SECURITY DEFINER SET search_path = public, pg_temp
AS $$
DECLARE
    shown text[] := ARRAY['name', 'key_prefix', 'scopes', 'revoked_at', 'revoked_reason', 'created_by'];
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
