-- Lifecycle events for other services (issue 12; README, "Platform events"): every change below is
-- published to the outbox in the transaction that makes it, whoever makes it (the admin, a service,
-- psql), and a rolled-back change never is. Once per statement, like the audit triggers: a bulk
-- provisioning of thousands of accounts is one INSERT into the outbox.
--
-- What an event carries (its "data"): the account's id, login, e-mail and status, and for a changed
-- address the previous one. Never a token, a code or a password hash.

CREATE FUNCTION account_event_data(account accounts) RETURNS jsonb
    LANGUAGE sql IMMUTABLE SET search_path = public, pg_temp
AS $$
    SELECT jsonb_build_object('id', account.id, 'login', account.login, 'email', account.email,
                              'status', account.status)
$$;

CREATE FUNCTION trg_after_account_insert_outbox() RETURNS trigger
    LANGUAGE plpgsql SECURITY DEFINER SET search_path = public, pg_temp
AS $$
BEGIN
    PERFORM outbox_append_many('account', array_agg(i.id::text ORDER BY i.id), 'account.created',
                               array_agg(account_event_data(i) ORDER BY i.id))
    FROM inserted_accounts i
    HAVING count(*) > 0;
    RETURN NULL;
END;
$$;

CREATE TRIGGER after_account_insert_outbox
    AFTER INSERT ON accounts
    REFERENCING NEW TABLE AS inserted_accounts
    FOR EACH STATEMENT
    EXECUTE FUNCTION trg_after_account_insert_outbox();

-- A status change is one event (activated, suspended or unsuspended, named as the audit trail names
-- it); a changed address is account.email_changed. A row whose status and address both changed
-- publishes both, the status first.
CREATE FUNCTION trg_after_account_update_outbox() RETURNS trigger
    LANGUAGE plpgsql SECURITY DEFINER SET search_path = public, pg_temp
AS $$
DECLARE
    change record;
BEGIN
    FOR change IN
        SELECT event_type, array_agg(id::text ORDER BY id) AS ids, array_agg(data ORDER BY id) AS datas
        FROM (
            SELECT n.id,
                   CASE
                       WHEN n.status = 'suspended' THEN 'account.suspended'
                       WHEN o.status = 'suspended' THEN 'account.unsuspended'
                       ELSE 'account.activated'
                   END AS event_type,
                   account_event_data(n) AS data,
                   1 AS rank
            FROM new_accounts n JOIN old_accounts o ON o.id = n.id
            WHERE n.status IS DISTINCT FROM o.status
            UNION ALL
            SELECT n.id, 'account.email_changed',
                   account_event_data(n) || jsonb_build_object('previous_email', o.email),
                   2
            FROM new_accounts n JOIN old_accounts o ON o.id = n.id
            WHERE n.email IS DISTINCT FROM o.email
        ) changes
        GROUP BY event_type
        ORDER BY min(rank), event_type
    LOOP
        PERFORM outbox_append_many('account', change.ids, change.event_type, change.datas);
    END LOOP;
    RETURN NULL;
END;
$$;

CREATE TRIGGER after_account_update_outbox
    AFTER UPDATE ON accounts
    REFERENCING OLD TABLE AS old_accounts NEW TABLE AS new_accounts
    FOR EACH STATEMENT
    EXECUTE FUNCTION trg_after_account_update_outbox();

CREATE FUNCTION trg_after_account_delete_outbox() RETURNS trigger
    LANGUAGE plpgsql SECURITY DEFINER SET search_path = public, pg_temp
AS $$
BEGIN
    PERFORM outbox_append_many('account', array_agg(d.id::text ORDER BY d.id), 'account.deleted',
                               array_agg(account_event_data(d) ORDER BY d.id))
    FROM deleted_accounts d
    HAVING count(*) > 0;
    RETURN NULL;
END;
$$;

CREATE TRIGGER after_account_delete_outbox
    AFTER DELETE ON accounts
    REFERENCING OLD TABLE AS deleted_accounts
    FOR EACH STATEMENT
    EXECUTE FUNCTION trg_after_account_delete_outbox();

-- A password set or changed (never the hash). The account's row lock first: a password change does
-- not touch accounts, and without the lock it could take its seq before a concurrent suspension of
-- the same account yet commit after it, and reach an endpoint out of order.
CREATE FUNCTION trg_after_password_outbox() RETURNS trigger
    LANGUAGE plpgsql SECURITY DEFINER SET search_path = public, pg_temp
AS $$
BEGIN
    PERFORM 1 FROM accounts a WHERE a.id IN (SELECT account FROM changed_passwords) ORDER BY a.id
        FOR NO KEY UPDATE OF a;
    PERFORM outbox_append_many('account', array_agg(a.id::text ORDER BY a.id), 'account.password_changed',
                               array_agg(account_event_data(a) || jsonb_build_object('password_changed_at', p.changed_at)
                                         ORDER BY a.id))
    FROM changed_passwords p JOIN accounts a ON a.id = p.account
    HAVING count(*) > 0;
    RETURN NULL;
END;
$$;

CREATE TRIGGER after_password_insert_outbox
    AFTER INSERT ON account_passwords
    REFERENCING NEW TABLE AS changed_passwords
    FOR EACH STATEMENT
    EXECUTE FUNCTION trg_after_password_outbox();

CREATE TRIGGER after_password_update_outbox
    AFTER UPDATE ON account_passwords
    REFERENCING NEW TABLE AS changed_passwords
    FOR EACH STATEMENT
    EXECUTE FUNCTION trg_after_password_outbox();
