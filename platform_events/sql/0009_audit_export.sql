-- The audit trail as auditors read it (issue 11): exports are audited, and a deleted account's trail
-- is found by its login or e-mail.

-- An export of the trail (the admin's CSV) is itself audited: audit.exported, naming the file, the
-- list's filter and how many rows it held. The runtime role may not write audit rows (0004), so it
-- writes this one row through this function, which runs as the owner and writes nothing else: the
-- action, the resource type and the shape of the diff are fixed here. The actor comes from the
-- SET LOCAL context as for every row (a claim; db_user says which role really called).
CREATE FUNCTION audit_record_export(file_name text, query text, row_count bigint, up_to timestamptz)
    RETURNS void
    LANGUAGE plpgsql SECURITY DEFINER SET search_path = public, pg_temp
AS $$
BEGIN
    IF file_name IS NULL OR file_name !~ '^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$' THEN
        RAISE EXCEPTION 'platform_events: an export''s file name is 1 to 64 letters, digits, dots, dashes or underscores, not %',
            coalesce(quote_literal(left(file_name, 80)), 'NULL') USING ERRCODE = 'LP002';
    END IF;
    IF row_count IS NULL OR row_count < 0 OR up_to IS NULL THEN
        RAISE EXCEPTION 'platform_events: an export names how many rows it holds and up to when'
            USING ERRCODE = 'LP002';
    END IF;
    PERFORM audit_record('audit.exported', 'audit_trail', file_name, NULL,
                         jsonb_build_object('query', coalesce(query, ''), 'rows', row_count, 'up_to', up_to));
END;
$$;

-- Search by login or e-mail finds a deleted account through its account.deleted row, which keeps
-- both (accounts/sql/0009_history_rules.sql). Partial: one entry per deleted account, none on the
-- sign-up path.
CREATE INDEX audit_events_deleted_login_idx ON audit_events (lower(diff_before ->> 'login'))
    WHERE action = 'account.deleted';
CREATE INDEX audit_events_deleted_email_idx ON audit_events (lower(diff_before ->> 'email'))
    WHERE action = 'account.deleted';
