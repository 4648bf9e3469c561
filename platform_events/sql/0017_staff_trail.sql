-- Staff logins, their groups and their permissions in the audit trail: Django's auth tables, changed by
-- the admin, by manage.py add_staff or createsuperuser, or by hand in SQL, each change a row written
-- as the owner (the runtime role cannot write the trail), with the actor the application claims
-- beside the database role (audit_actor()). docs/audit-trail.md, "Staff logins and their privileges".
--
-- Never a password hash: a changed password is the row's action, nothing more. A sign-in's last_login
-- is not a change of privileges and writes nothing (the update trigger's WHEN does not even call it).
-- Each staff_user row carries the login's username, so it reads by name after a rename or deletion.

-- What the trail keeps of a staff login: who it is and what it may do.
CREATE FUNCTION staff_user_audit_fields(u auth_user) RETURNS jsonb
    LANGUAGE sql IMMUTABLE SET search_path = public, pg_temp
AS $$
    SELECT jsonb_build_object('username', u.username, 'is_staff', u.is_staff, 'is_superuser', u.is_superuser,
                              'is_active', u.is_active)
$$;

CREATE FUNCTION trg_after_staff_user_audit() RETURNS trigger
    LANGUAGE plpgsql SECURITY DEFINER SET search_path = public, pg_temp
AS $$
DECLARE
    diff record;
BEGIN
    IF TG_OP = 'INSERT' THEN
        PERFORM audit_record('staff_user.created', 'staff_user', NEW.id::text, NULL, staff_user_audit_fields(NEW));
        RETURN NULL;
    END IF;
    IF TG_OP = 'DELETE' THEN
        PERFORM audit_record('staff_user.deleted', 'staff_user', OLD.id::text, staff_user_audit_fields(OLD), NULL);
        RETURN NULL;
    END IF;
    diff := audit_diff(staff_user_audit_fields(OLD), staff_user_audit_fields(NEW));
    IF diff.diff_after IS NOT NULL THEN
        PERFORM audit_record('staff_user.changed', 'staff_user', NEW.id::text, diff.diff_before,
                             jsonb_build_object('username', NEW.username) || diff.diff_after);
    END IF;
    IF NEW.password IS DISTINCT FROM OLD.password THEN
        -- Django's unusable password starts with "!": no password signs in.
        PERFORM audit_record(
            CASE WHEN NEW.password LIKE '!%' THEN 'staff_user.password_removed' ELSE 'staff_user.password_changed' END,
            'staff_user', NEW.id::text, NULL, jsonb_build_object('username', NEW.username));
    END IF;
    RETURN NULL;
END;
$$;

CREATE TRIGGER after_staff_user_insert_delete_audit
    AFTER INSERT OR DELETE ON auth_user
    FOR EACH ROW
    EXECUTE FUNCTION trg_after_staff_user_audit();

-- Only the columns the trail keeps: last_login, names and e-mail change without a row.
CREATE TRIGGER after_staff_user_update_audit
    AFTER UPDATE ON auth_user
    FOR EACH ROW
    WHEN (OLD.username IS DISTINCT FROM NEW.username OR OLD.is_staff IS DISTINCT FROM NEW.is_staff
          OR OLD.is_superuser IS DISTINCT FROM NEW.is_superuser OR OLD.is_active IS DISTINCT FROM NEW.is_active
          OR OLD.password IS DISTINCT FROM NEW.password)
    EXECUTE FUNCTION trg_after_staff_user_audit();

-- A group's and a permission's names as has_perm() reads them ("accounts.change_account"), or "#id"
-- for one deleted in the same statement.
CREATE FUNCTION staff_audit_group_name(group_id integer) RETURNS text
    LANGUAGE sql STABLE SET search_path = public, pg_temp
AS $$
    SELECT coalesce((SELECT name FROM auth_group WHERE id = group_id)::text, '#' || group_id)
$$;

CREATE FUNCTION staff_audit_permission_name(permission_id integer) RETURNS text
    LANGUAGE sql STABLE SET search_path = public, pg_temp
AS $$
    SELECT coalesce((SELECT ct.app_label || '.' || p.codename
                     FROM auth_permission p JOIN django_content_type ct ON ct.id = p.content_type_id
                     WHERE p.id = permission_id), '#' || permission_id)
$$;

CREATE FUNCTION staff_audit_username(user_id integer) RETURNS text
    LANGUAGE sql STABLE SET search_path = public, pg_temp
AS $$
    SELECT coalesce((SELECT username FROM auth_user WHERE id = user_id)::text, '#' || user_id)
$$;

-- A login's groups: an UPDATE of a link is a removal and an addition.
CREATE FUNCTION trg_after_staff_user_group_audit() RETURNS trigger
    LANGUAGE plpgsql SECURITY DEFINER SET search_path = public, pg_temp
AS $$
BEGIN
    IF TG_OP IN ('UPDATE', 'DELETE') THEN
        PERFORM audit_record('staff_user.group_removed', 'staff_user', OLD.user_id::text,
                             jsonb_build_object('username', staff_audit_username(OLD.user_id),
                                                'group', staff_audit_group_name(OLD.group_id)), NULL);
    END IF;
    IF TG_OP IN ('INSERT', 'UPDATE') THEN
        PERFORM audit_record('staff_user.group_added', 'staff_user', NEW.user_id::text, NULL,
                             jsonb_build_object('username', staff_audit_username(NEW.user_id),
                                                'group', staff_audit_group_name(NEW.group_id)));
    END IF;
    RETURN NULL;
END;
$$;

CREATE TRIGGER after_staff_user_group_audit
    AFTER INSERT OR UPDATE OR DELETE ON auth_user_groups
    FOR EACH ROW
    EXECUTE FUNCTION trg_after_staff_user_group_audit();

-- A login's own permissions, beside its groups'.
CREATE FUNCTION trg_after_staff_user_permission_audit() RETURNS trigger
    LANGUAGE plpgsql SECURITY DEFINER SET search_path = public, pg_temp
AS $$
BEGIN
    IF TG_OP IN ('UPDATE', 'DELETE') THEN
        PERFORM audit_record('staff_user.permission_revoked', 'staff_user', OLD.user_id::text,
                             jsonb_build_object('username', staff_audit_username(OLD.user_id),
                                                'permission', staff_audit_permission_name(OLD.permission_id)), NULL);
    END IF;
    IF TG_OP IN ('INSERT', 'UPDATE') THEN
        PERFORM audit_record('staff_user.permission_granted', 'staff_user', NEW.user_id::text, NULL,
                             jsonb_build_object('username', staff_audit_username(NEW.user_id),
                                                'permission', staff_audit_permission_name(NEW.permission_id)));
    END IF;
    RETURN NULL;
END;
$$;

CREATE TRIGGER after_staff_user_permission_audit
    AFTER INSERT OR UPDATE OR DELETE ON auth_user_user_permissions
    FOR EACH ROW
    EXECUTE FUNCTION trg_after_staff_user_permission_audit();

-- A group's permissions: what every login in it may do.
CREATE FUNCTION trg_after_group_permission_audit() RETURNS trigger
    LANGUAGE plpgsql SECURITY DEFINER SET search_path = public, pg_temp
AS $$
BEGIN
    IF TG_OP IN ('UPDATE', 'DELETE') THEN
        PERFORM audit_record('group.permission_revoked', 'group', OLD.group_id::text,
                             jsonb_build_object('group', staff_audit_group_name(OLD.group_id),
                                                'permission', staff_audit_permission_name(OLD.permission_id)), NULL);
    END IF;
    IF TG_OP IN ('INSERT', 'UPDATE') THEN
        PERFORM audit_record('group.permission_granted', 'group', NEW.group_id::text, NULL,
                             jsonb_build_object('group', staff_audit_group_name(NEW.group_id),
                                                'permission', staff_audit_permission_name(NEW.permission_id)));
    END IF;
    RETURN NULL;
END;
$$;

CREATE TRIGGER after_group_permission_audit
    AFTER INSERT OR UPDATE OR DELETE ON auth_group_permissions
    FOR EACH ROW
    EXECUTE FUNCTION trg_after_group_permission_audit();

-- Groups themselves: the roles are groups named after them (lifecycle/backoffice/roles.py).
CREATE FUNCTION trg_after_group_audit() RETURNS trigger
    LANGUAGE plpgsql SECURITY DEFINER SET search_path = public, pg_temp
AS $$
BEGIN
    IF TG_OP = 'INSERT' THEN
        PERFORM audit_record('group.created', 'group', NEW.id::text, NULL, jsonb_build_object('group', NEW.name));
    ELSIF TG_OP = 'DELETE' THEN
        PERFORM audit_record('group.deleted', 'group', OLD.id::text, jsonb_build_object('group', OLD.name), NULL);
    ELSIF NEW.name IS DISTINCT FROM OLD.name THEN
        PERFORM audit_record('group.renamed', 'group', NEW.id::text, jsonb_build_object('group', OLD.name),
                             jsonb_build_object('group', NEW.name));
    END IF;
    RETURN NULL;
END;
$$;

CREATE TRIGGER after_group_audit
    AFTER INSERT OR UPDATE OR DELETE ON auth_group
    FOR EACH ROW
    EXECUTE FUNCTION trg_after_group_audit();

-- A permission is held by its id: renaming its codename or its content type (app label and model)
-- changes what every group and login holding it may do, so those renames are audited too. A new
-- permission (each migrate makes those of new models) or a deleted one (its links go first) grants
-- nothing by itself.
CREATE FUNCTION trg_after_permission_rename_audit() RETURNS trigger
    LANGUAGE plpgsql SECURITY DEFINER SET search_path = public, pg_temp
AS $$
BEGIN
    PERFORM audit_record('permission.renamed', 'permission', NEW.id::text,
                         jsonb_build_object('permission', (SELECT app_label || '.' || OLD.codename
                                                           FROM django_content_type WHERE id = OLD.content_type_id)),
                         jsonb_build_object('permission', staff_audit_permission_name(NEW.id)));
    RETURN NULL;
END;
$$;

CREATE TRIGGER after_permission_rename_audit
    AFTER UPDATE ON auth_permission
    FOR EACH ROW
    WHEN (OLD.codename IS DISTINCT FROM NEW.codename OR OLD.content_type_id IS DISTINCT FROM NEW.content_type_id)
    EXECUTE FUNCTION trg_after_permission_rename_audit();

CREATE FUNCTION trg_after_content_type_rename_audit() RETURNS trigger
    LANGUAGE plpgsql SECURITY DEFINER SET search_path = public, pg_temp
AS $$
BEGIN
    PERFORM audit_record('content_type.renamed', 'content_type', NEW.id::text,
                         jsonb_build_object('content_type', OLD.app_label || '.' || OLD.model),
                         jsonb_build_object('content_type', NEW.app_label || '.' || NEW.model));
    RETURN NULL;
END;
$$;

CREATE TRIGGER after_content_type_rename_audit
    AFTER UPDATE ON django_content_type
    FOR EACH ROW
    WHEN (OLD.app_label IS DISTINCT FROM NEW.app_label OR OLD.model IS DISTINCT FROM NEW.model)
    EXECUTE FUNCTION trg_after_content_type_rename_audit();
