-- A staff login, a group, a permission, a content type, an API client and a webhook endpoint keep their ids.
--
-- Privileges are held by id: auth_user_groups, auth_group_permissions and auth_user_user_permissions
-- link ids, and Django's foreign keys on them are checked at commit. Three UPDATEs of the ids alone
-- in one transaction (a permission's id moved aside, another's moved to it, the first moved back)
-- swapped what two permissions' holders may do: Support held auth.change_user instead of
-- accounts.view_account, and no trigger of 0017_staff_trail.sql saw a change of name, flag or link.
-- The same with two groups' or two logins' ids moves every membership and own permission. Django never
-- changes these ids, so every role is refused it (a new id is a new row, whose links are audited).
-- Likewise an API client and a webhook endpoint, which the trail names by id (api-client:7 acted;
-- webhook_endpoint 3 was paused): with their ids swapped, rows written afterwards would name one for
-- the other, and their audit triggers, which compare what they show, saw no change.

CREATE FUNCTION trg_before_id_change() RETURNS trigger
    LANGUAGE plpgsql SET search_path = public, pg_temp
AS $$
BEGIN
    RAISE EXCEPTION 'platform_events: % % keeps its id (what is linked to it would change hands); make a new row instead',
        TG_TABLE_NAME, OLD.id
        USING ERRCODE = 'LP003';
END;
$$;

CREATE TRIGGER before_staff_user_id_change
    BEFORE UPDATE OF id ON auth_user
    FOR EACH ROW
    WHEN (OLD.id IS DISTINCT FROM NEW.id)
    EXECUTE FUNCTION trg_before_id_change();

CREATE TRIGGER before_group_id_change
    BEFORE UPDATE OF id ON auth_group
    FOR EACH ROW
    WHEN (OLD.id IS DISTINCT FROM NEW.id)
    EXECUTE FUNCTION trg_before_id_change();

CREATE TRIGGER before_permission_id_change
    BEFORE UPDATE OF id ON auth_permission
    FOR EACH ROW
    WHEN (OLD.id IS DISTINCT FROM NEW.id)
    EXECUTE FUNCTION trg_before_id_change();

CREATE TRIGGER before_content_type_id_change
    BEFORE UPDATE OF id ON django_content_type
    FOR EACH ROW
    WHEN (OLD.id IS DISTINCT FROM NEW.id)
    EXECUTE FUNCTION trg_before_id_change();

CREATE TRIGGER before_api_client_id_change
    BEFORE UPDATE OF id ON api_clients
    FOR EACH ROW
    WHEN (OLD.id IS DISTINCT FROM NEW.id)
    EXECUTE FUNCTION trg_before_id_change();

CREATE TRIGGER before_webhook_subscription_id_change
    BEFORE UPDATE OF id ON webhook_subscriptions
    FOR EACH ROW
    WHEN (OLD.id IS DISTINCT FROM NEW.id)
    EXECUTE FUNCTION trg_before_id_change();
