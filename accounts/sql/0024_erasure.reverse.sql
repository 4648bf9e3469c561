-- 0024 undone: refused while an account is erased (its row cannot hold the address back). Then the
-- functions as 0021 (accounts), 0019 and 0022 (platform_events) and 0013 (the API) left them, the
-- erasure's own functions, triggers and table gone, and the address and login required again.
DO $$
BEGIN
    IF EXISTS (SELECT FROM accounts WHERE status = 'erased') THEN
        RAISE EXCEPTION 'accounts: % account(s) are erased; this migration cannot be undone while an erased account exists',
            (SELECT count(*) FROM accounts WHERE status = 'erased') USING ERRCODE = 'LA005';
    END IF;
END;
$$;

DROP FUNCTION account_erase(bigint);
DROP FUNCTION account_erasure_owned(text[], bigint);
DROP FUNCTION erasure_blank_audit_rows(text, text, text[]);
DROP FUNCTION account_erasure_identifiers(bigint);
DROP TRIGGER before_webhook_delivery_record_erased ON webhook_deliveries;
DROP FUNCTION trg_before_webhook_delivery_record_erased();
DROP TRIGGER before_webhook_delivery_cancelled_kept ON webhook_deliveries;
DROP TRIGGER before_event_publication_cancelled_kept ON event_publications;
DROP FUNCTION trg_before_cancelled_kept();
DROP TRIGGER before_token_insert_account_live_erased ON tokens;
DROP TRIGGER before_node_assignment_insert_erased ON node_assignments;
DROP FUNCTION trg_before_insert_account_erased();
DROP TRIGGER before_account_erased_kept ON accounts;
DROP TRIGGER before_account_insert_erased ON accounts;
DROP FUNCTION trg_before_account_erased_kept();

CREATE OR REPLACE FUNCTION trg_after_account_deprovision()
 RETURNS trigger
 LANGUAGE plpgsql
 SET search_path TO 'public', 'pg_temp'
AS $$
BEGIN
    IF NEW.status = 'deprovisioned' THEN
        UPDATE tokens SET superseded_at = now()
        WHERE id IN (SELECT id FROM tokens
                     WHERE account = NEW.id AND consumed_at IS NULL AND superseded_at IS NULL
                     FOR UPDATE SKIP LOCKED);
        PERFORM node_routine_retire_deprovisioned(NEW.id);
    ELSE
        UPDATE tokens SET superseded_at = now()
        WHERE account = NEW.id AND consumed_at IS NULL AND superseded_at IS NULL;
        INSERT INTO tokens (account, action) VALUES (NEW.id, 'activation');
    END IF;
    RETURN NULL;
END;
$$;

CREATE OR REPLACE FUNCTION trg_after_account_update_audit()
 RETURNS trigger
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'public', 'pg_temp'
AS $$
DECLARE
    diff record := audit_diff(to_jsonb(OLD), to_jsonb(NEW));
BEGIN
    PERFORM audit_record(
        CASE
            WHEN NEW.status = OLD.status THEN 'account.changed'
            WHEN NEW.status = 'deprovisioned' THEN 'account.deprovisioned'
            WHEN OLD.status = 'deprovisioned' THEN 'account.reprovisioned'
            WHEN NEW.status = 'suspended' THEN 'account.suspended'
            WHEN OLD.status = 'suspended' THEN 'account.unsuspended'
            ELSE 'account.activated'
        END,
        'account', NEW.id::text, diff.diff_before, diff.diff_after);
    RETURN NULL;
END;
$$;

CREATE OR REPLACE FUNCTION trg_after_account_update_outbox()
 RETURNS trigger
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'public', 'pg_temp'
AS $$
DECLARE
    change record;
BEGIN
    FOR change IN
        SELECT event_type, array_agg(id::text ORDER BY id) AS ids, array_agg(data ORDER BY id) AS datas
        FROM (
            SELECT n.id,
                   CASE
                       WHEN n.status = 'deprovisioned' THEN 'account.deprovisioned'
                       WHEN o.status = 'deprovisioned' THEN 'account.reprovisioned'
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

CREATE OR REPLACE FUNCTION trg_audit_events_append_only()
 RETURNS trigger
 LANGUAGE plpgsql
 SET search_path TO 'public', 'pg_temp'
AS $$
BEGIN
    RAISE EXCEPTION 'platform_events: audit events cannot be changed or deleted' USING ERRCODE = 'LP001';
END;
$$;

CREATE OR REPLACE FUNCTION trg_before_account_status_change()
 RETURNS trigger
 LANGUAGE plpgsql
 SET search_path TO 'public', 'pg_temp'
AS $$
DECLARE
    ts timestamptz := now();
BEGIN
    IF OLD.status = 'deprovisioned' AND NEW.status <> 'provisioned' THEN
        RAISE EXCEPTION 'accounts: account % is deprovisioned; only reprovisioning (set it to provisioned) brings it back', OLD.id
            USING ERRCODE = 'LA007';
    END IF;
    IF NEW.status = 'provisioned' AND OLD.status <> 'deprovisioned' THEN
        RAISE EXCEPTION 'accounts: account % cannot be set back to provisioned (set it to active to unsuspend it)', OLD.id
            USING ERRCODE = 'LA005';
    END IF;

    NEW.status_changed_at := ts;
    IF NEW.status = 'deprovisioned' THEN
        NEW.deprovisioned_at := ts;
        NEW.reprovisioned_at := NULL;
    ELSIF NEW.status = 'provisioned' THEN
        -- Reprovisioned: back to the start, its address still claimed if it had activated.
        NEW.reprovisioned_at := ts;
        NEW.deprovisioned_at := NULL;
        NEW.suspended_at := NULL;
        NEW.unsuspended_at := NULL;
    ELSIF NEW.status = 'active' THEN
        IF OLD.status = 'provisioned' THEN
            NEW.activated_at := ts;
        ELSIF OLD.status = 'suspended' THEN
            NEW.unsuspended_at := ts;
            NEW.suspended_at := NULL;
            -- Revert to provisioned if never activated (seed rule).
            IF OLD.activated_at IS NULL THEN
                NEW.status := 'provisioned';
            END IF;
        END IF;
    ELSIF NEW.status = 'suspended' THEN
        NEW.suspended_at := ts;
        NEW.unsuspended_at := NULL;
    END IF;
    RETURN NEW;
END;
$$;

CREATE OR REPLACE FUNCTION trg_before_event_publication_move()
 RETURNS trigger
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'public', 'pg_temp'
AS $$
DECLARE
    shown text[] := ARRAY['status', 'attempts', 'next_attempt_at', 'lease_until', 'last_error', 'published_at',
                          'kafka_partition', 'kafka_offset'];
    diff record := audit_diff(
        (SELECT jsonb_object_agg(key, value) FROM jsonb_each(to_jsonb(OLD)) WHERE key = ANY(shown)),
        (SELECT jsonb_object_agg(key, value) FROM jsonb_each(to_jsonb(NEW)) WHERE key = ANY(shown)));
BEGIN
    IF NOT history_rewrite_allowed() THEN
        RAISE EXCEPTION 'platform_events: the publication of event % cannot be changed so (%): only its claim, or the attempt the claiming relay records, may change it',
            OLD.event_id, coalesce((SELECT string_agg(field, ', ' ORDER BY field) FROM jsonb_object_keys(diff.diff_after) field),
                                   'its claim')
            USING ERRCODE = 'LP003';
    END IF;
    PERFORM audit_record('event.publication_rewritten', 'event_publication', OLD.event_id::text, diff.diff_before,
                         diff.diff_after);
    RETURN NEW;
END;
$$;

CREATE OR REPLACE FUNCTION trg_before_idempotency_key_change()
 RETURNS trigger
 LANGUAGE plpgsql
 SET search_path TO 'public', 'pg_temp'
AS $$
BEGIN
    IF OLD.response_status IS NOT NULL AND OLD.expires_at > now() THEN
        RAISE EXCEPTION 'api: a finished Idempotency-Key is kept as it is until it expires (%)', OLD.expires_at
            USING ERRCODE = 'LP006';
    END IF;
    RETURN CASE WHEN TG_OP = 'DELETE' THEN OLD ELSE NEW END;
END;
$$;

CREATE OR REPLACE FUNCTION trg_before_outbox_event_update()
 RETURNS trigger
 LANGUAGE plpgsql
 SET search_path TO 'public', 'pg_temp'
AS $$
BEGIN
    RAISE EXCEPTION 'platform_events: outbox events cannot be changed' USING ERRCODE = 'LP003';
END;
$$;

CREATE OR REPLACE FUNCTION trg_before_webhook_delivery_move()
 RETURNS trigger
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'public', 'pg_temp'
AS $$
DECLARE
    shown text[] := ARRAY['status', 'attempts', 'next_retry_at', 'lease_until', 'http_status',
                          'http_response_body_excerpt', 'latency_ms', 'first_attempt_at', 'last_attempt_at'];
    diff record := audit_diff(
        (SELECT jsonb_object_agg(key, value) FROM jsonb_each(to_jsonb(OLD)) WHERE key = ANY(shown)),
        (SELECT jsonb_object_agg(key, value) FROM jsonb_each(to_jsonb(NEW)) WHERE key = ANY(shown)));
BEGIN
    IF NOT history_rewrite_allowed() THEN
        RAISE EXCEPTION 'platform_events: delivery % cannot be changed so (%): only its claim, the attempt the claiming run records, or sending it again may change it',
            OLD.id, coalesce((SELECT string_agg(field, ', ' ORDER BY field) FROM jsonb_object_keys(diff.diff_after) field),
                             'its claim')
            USING ERRCODE = 'LP003';
    END IF;
    PERFORM audit_record('webhook.delivery_rewritten', 'webhook_delivery', OLD.id::text, diff.diff_before,
                         diff.diff_after);
    RETURN NEW;
END;
$$;

DROP FUNCTION erasure_scrub_json(jsonb, text[]);
DROP FUNCTION erasure_scrub_text(text, text[]);
DROP FUNCTION erasure_mentions(text, text[]);
DROP FUNCTION erasure_account();
DROP TABLE erasure_in_progress;
DROP INDEX audit_events_with_reason_idx;
ALTER TABLE accounts DROP CONSTRAINT ck_accounts_erased_blank;
ALTER TABLE accounts ALTER COLUMN email SET NOT NULL, ALTER COLUMN login SET NOT NULL;
