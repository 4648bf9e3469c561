-- account.created rows through audit_record_many() (platform_events/sql/0003_audit_rows.sql), the
-- one place that lists the audit trail's columns; still once per statement over the inserted rows.
CREATE OR REPLACE FUNCTION trg_after_account_insert_audit() RETURNS trigger
    LANGUAGE plpgsql
AS $$
BEGIN
    -- Both aggregates read the rows in the same order, so the arrays line up.
    PERFORM audit_record_many('account.created', 'account', array_agg(i.id::text), NULL,
                              array_agg(jsonb_build_object('email', i.email, 'login', i.login, 'status', i.status)))
    FROM inserted_accounts i;
    RETURN NULL;
END;
$$;
