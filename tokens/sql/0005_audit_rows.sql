-- token.issued rows through audit_record_many() (platform_events/sql/0003_audit_rows.sql), the one
-- place that lists the audit trail's columns; still once per statement over the inserted rows.
CREATE OR REPLACE FUNCTION trg_after_token_insert_audit() RETURNS trigger
    LANGUAGE plpgsql
AS $$
BEGIN
    -- Both aggregates read the rows in the same order, so the arrays line up.
    PERFORM audit_record_many('token.issued', 'token', array_agg(i.id::text), NULL,
                              array_agg(jsonb_build_object('account', i.account, 'action', i.action,
                                                           'expires_at', i.expires_at)))
    FROM inserted_tokens i;
    RETURN NULL;
END;
$$;
