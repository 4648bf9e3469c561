-- Erasure, the final end of an account (docs/rules.md, "Erasure").
--
-- account_erase(id) erases a deprovisioned account in one transaction: what is still due to be sent
-- about it is cancelled, every copy of the person's data the database holds is blanked, and the
-- account row stays as "account #N (erased)": its id, its status erased and its timestamps, with no
-- address, login or password. The trail keeps every row it had (who created, suspended, deprovisioned
-- and erased it, when and why), with the address and login blanked wherever they appeared, and an
-- account.erased row and event (the id only) last.
--
-- The trail stays append-only for every client. Erasure is the one writer allowed to blank columns in
-- it, and only while it runs: account_erase() runs as the owner (SECURITY DEFINER) and marks its own
-- transaction in erasure_in_progress, a table nobody else may write (not even read); the append-only
-- and outbox triggers let a change through only in that transaction, and only to the columns that may
-- carry the person's data. The mark is deleted before the function returns, so nothing that runs
-- after it in the same transaction is let through either.
--
-- What it blanks is what the database can tie to the account: the identifiers are the account's
-- address and login, with every earlier address and login its trail and events recorded; every copy of
-- them (in any case) in the account's audit rows, its tokens' rows, the rows it acted in and the rows
-- about the deliveries of its events, and of its addresses in the reason of any audit row; in its events' payloads and
-- their deliveries' response excerpts (dropped whole: a receiver may echo the address in any
-- encoding); in the stored answers of idempotency keys. Its tokens and password are deleted. Its node
-- assignments, all retired by the deprovisioning, go with the purge that tells their storage nodes to
-- delete the data (accounts/retention.py). The tables Django's own apps keep (django-q2's tasks, the
-- staff log-in records, the admin's log) and the rate-limit buckets are blanked in the same
-- transaction by the Python service that calls this (accounts/erasure.py).

ALTER TABLE accounts ALTER COLUMN email DROP NOT NULL, ALTER COLUMN login DROP NOT NULL;
ALTER TABLE accounts ADD CONSTRAINT ck_accounts_erased_blank CHECK (
    CASE WHEN status = 'erased' THEN email IS NULL AND login IS NULL
         ELSE email IS NOT NULL AND login IS NOT NULL END) NOT VALID;
ALTER TABLE accounts VALIDATE CONSTRAINT ck_accounts_erased_blank;

-- The rows whose reason an erasure sweeps for the account's addresses: those with a reason, a part of
-- the trail (a sign-up's, a token's and a mail run's rows have none).
CREATE INDEX audit_events_with_reason_idx ON audit_events (occurred_at) WHERE reason IS NOT NULL;

-- The transaction an erasure runs in, while it runs. The owner's alone: the runtime role is given
-- nothing on it (platform_events/db/runtime_role.py).
CREATE TABLE erasure_in_progress (
    txid xid8 PRIMARY KEY DEFAULT pg_current_xact_id(),
    account bigint NOT NULL
);
REVOKE ALL ON erasure_in_progress FROM PUBLIC;

-- The account this transaction is erasing now, or NULL.
CREATE FUNCTION erasure_account() RETURNS bigint
    LANGUAGE sql STABLE SECURITY DEFINER SET search_path = public, pg_temp
AS $$
    SELECT account FROM erasure_in_progress WHERE txid = pg_current_xact_id_if_assigned()
$$;

-- Whether ``value`` holds one of ``identifiers`` (lower case), in any case.
CREATE FUNCTION erasure_mentions(value text, identifiers text[]) RETURNS boolean
    LANGUAGE sql IMMUTABLE PARALLEL SAFE SET search_path = public, pg_temp
AS $$
    SELECT value IS NOT NULL AND EXISTS (SELECT FROM unnest(identifiers) i WHERE strpos(lower(value), i) > 0)
$$;

-- ``value`` with every copy of each identifier (lower case), in any case, replaced by [erased]: an
-- address wherever it appears; a login where it stands as a word of its own (not inside a longer
-- name: the login "at" leaves "activated_at" whole). Longest first, so that an address goes whole
-- before a login inside it.
CREATE FUNCTION erasure_scrub_text(value text, identifiers text[]) RETURNS text
    LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE SET search_path = public, pg_temp
AS $$
DECLARE
    identifier text;
    at int;
BEGIN
    IF value IS NULL THEN
        RETURN NULL;
    END IF;
    FOR identifier IN SELECT i FROM unnest(identifiers) i ORDER BY length(i) DESC, i LOOP
        IF position('@' IN identifier) > 0 THEN
            at := strpos(lower(value), identifier);
            WHILE at > 0 LOOP
                value := left(value, at - 1) || '[erased]' || substr(value, at + length(identifier));
                at := strpos(lower(value), identifier);
            END LOOP;
        ELSE
            value := regexp_replace(value, '(?<![A-Za-z0-9_])' || regexp_replace(identifier, '([^A-Za-z0-9])', '\\\1', 'g')
                                           || '(?![A-Za-z0-9_])', '[erased]', 'gi');
        END IF;
    END LOOP;
    RETURN value;
END;
$$;

-- ``value`` with each string in it (not the keys, which the code names) scrubbed as erasure_scrub_text() does.
CREATE FUNCTION erasure_scrub_json(value jsonb, identifiers text[]) RETURNS jsonb
    LANGUAGE sql IMMUTABLE PARALLEL SAFE SET search_path = public, pg_temp
AS $$
    SELECT CASE jsonb_typeof(value)
        WHEN 'object' THEN (SELECT coalesce(jsonb_object_agg(key, erasure_scrub_json(member, identifiers)), '{}')
                            FROM jsonb_each(value) AS m(key, member))
        WHEN 'array' THEN (SELECT coalesce(jsonb_agg(erasure_scrub_json(element, identifiers) ORDER BY n), '[]')
                           FROM jsonb_array_elements(value) WITH ORDINALITY AS e(element, n))
        WHEN 'string' THEN to_jsonb(erasure_scrub_text(value #>> '{}', identifiers))
        ELSE value
    END
$$;

-- The audit trail: append-only, except for the columns that may carry the person's data while an
-- erasure runs.
CREATE OR REPLACE FUNCTION trg_audit_events_append_only() RETURNS trigger
    LANGUAGE plpgsql SET search_path = public, pg_temp
AS $$
BEGIN
    IF TG_OP = 'UPDATE' AND erasure_account() IS NOT NULL
       AND (NEW.id, NEW.occurred_at, NEW.actor_type, NEW.actor_id, NEW.action, NEW.resource_type, NEW.resource_id,
            NEW.result, NEW.correlation_id, NEW.request_id, NEW.method, NEW.status_code, NEW.db_user)
           IS NOT DISTINCT FROM
           (OLD.id, OLD.occurred_at, OLD.actor_type, OLD.actor_id, OLD.action, OLD.resource_type, OLD.resource_id,
            OLD.result, OLD.correlation_id, OLD.request_id, OLD.method, OLD.status_code, OLD.db_user) THEN
        RETURN NEW;
    END IF;
    RAISE EXCEPTION 'platform_events: audit events cannot be changed or deleted' USING ERRCODE = 'LP001';
END;
$$;

-- The outbox: an event's payload is blanked by an erasure; nothing else changes, ever.
CREATE OR REPLACE FUNCTION trg_before_outbox_event_update() RETURNS trigger
    LANGUAGE plpgsql SET search_path = public, pg_temp
AS $$
BEGIN
    IF erasure_account() IS NOT NULL
       AND (NEW.id, NEW.seq, NEW.aggregate_type, NEW.aggregate_id, NEW.event_type, NEW.created_at)
           IS NOT DISTINCT FROM (OLD.id, OLD.seq, OLD.aggregate_type, OLD.aggregate_id, OLD.event_type, OLD.created_at) THEN
        RETURN NEW;
    END IF;
    RAISE EXCEPTION 'platform_events: outbox events cannot be changed' USING ERRCODE = 'LP003';
END;
$$;

-- A delivery cancelled, or its excerpt dropped, by an erasure: let through unaudited (the erasure's
-- own audit row counts them); any other move as 0019_outbox_trail.sql keeps it.
CREATE OR REPLACE FUNCTION trg_before_webhook_delivery_move() RETURNS trigger
    LANGUAGE plpgsql SECURITY DEFINER SET search_path = public, pg_temp
AS $$
DECLARE
    shown text[] := ARRAY['status', 'attempts', 'next_retry_at', 'lease_until', 'http_status',
                          'http_response_body_excerpt', 'latency_ms', 'first_attempt_at', 'last_attempt_at'];
    diff record := audit_diff(
        (SELECT jsonb_object_agg(key, value) FROM jsonb_each(to_jsonb(OLD)) WHERE key = ANY(shown)),
        (SELECT jsonb_object_agg(key, value) FROM jsonb_each(to_jsonb(NEW)) WHERE key = ANY(shown)));
BEGIN
    IF erasure_account() IS NOT NULL THEN
        RETURN NEW;
    END IF;
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

CREATE OR REPLACE FUNCTION trg_before_event_publication_move() RETURNS trigger
    LANGUAGE plpgsql SECURITY DEFINER SET search_path = public, pg_temp
AS $$
DECLARE
    shown text[] := ARRAY['status', 'attempts', 'next_attempt_at', 'lease_until', 'last_error', 'published_at',
                          'kafka_partition', 'kafka_offset'];
    diff record := audit_diff(
        (SELECT jsonb_object_agg(key, value) FROM jsonb_each(to_jsonb(OLD)) WHERE key = ANY(shown)),
        (SELECT jsonb_object_agg(key, value) FROM jsonb_each(to_jsonb(NEW)) WHERE key = ANY(shown)));
BEGIN
    IF erasure_account() IS NOT NULL THEN
        RETURN NEW;
    END IF;
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

-- CANCELLED is final: a delivery or a publication cancelled by an erasure is never sent again (sending
-- it again would deliver the erased account's events after its account.erased).
CREATE FUNCTION trg_before_cancelled_kept() RETURNS trigger
    LANGUAGE plpgsql SET search_path = public, pg_temp
AS $$
BEGIN
    IF erasure_account() IS NOT NULL THEN
        RETURN NEW;
    END IF;
    RAISE EXCEPTION 'platform_events: % was cancelled when its account was erased; it is never sent',
        CASE TG_TABLE_NAME WHEN 'webhook_deliveries' THEN 'this delivery' ELSE 'this publication' END
        USING ERRCODE = 'LP003';
END;
$$;

CREATE TRIGGER before_webhook_delivery_cancelled_kept
    BEFORE UPDATE ON webhook_deliveries
    FOR EACH ROW WHEN (OLD.status = 'CANCELLED')
    EXECUTE FUNCTION trg_before_cancelled_kept();

CREATE TRIGGER before_event_publication_cancelled_kept
    BEFORE UPDATE ON event_publications
    FOR EACH ROW WHEN (OLD.status = 'CANCELLED')
    EXECUTE FUNCTION trg_before_cancelled_kept();

-- The attempt a sender records for a delivery of an erased account's event, sent while the erasure ran:
-- the answer's excerpt is not kept (a receiver may echo the address), and a failure is not retried.
CREATE FUNCTION trg_before_webhook_delivery_record_erased() RETURNS trigger
    LANGUAGE plpgsql SECURITY DEFINER SET search_path = public, pg_temp
AS $$
BEGIN
    IF EXISTS (SELECT FROM outbox_events o JOIN accounts a ON o.aggregate_type = 'account' AND a.id::text = o.aggregate_id
               WHERE o.id = NEW.event_id AND a.status = 'erased') THEN
        NEW.http_response_body_excerpt := NULL;
        IF NEW.status = 'FAILED' THEN
            NEW.status := 'CANCELLED';
        END IF;
    END IF;
    RETURN NEW;
END;
$$;

CREATE TRIGGER before_webhook_delivery_record_erased
    BEFORE UPDATE ON webhook_deliveries
    FOR EACH ROW WHEN (OLD.claim IS NOT NULL AND NEW.claim IS NULL AND NEW.attempts > OLD.attempts)
    EXECUTE FUNCTION trg_before_webhook_delivery_record_erased();

-- A finished Idempotency-Key's answer is blanked by an erasure, and a key made of what it erases is
-- deleted; otherwise kept until it expires.
CREATE OR REPLACE FUNCTION trg_before_idempotency_key_change() RETURNS trigger
    LANGUAGE plpgsql SET search_path = public, pg_temp
AS $$
BEGIN
    IF TG_OP = 'DELETE' AND erasure_account() IS NOT NULL THEN
        RETURN OLD;
    END IF;
    IF TG_OP = 'UPDATE' AND erasure_account() IS NOT NULL
       AND (NEW.client_id, NEW.key, NEW.request_hash, NEW.response_status, NEW.expires_at)
           IS NOT DISTINCT FROM (OLD.client_id, OLD.key, OLD.request_hash, OLD.response_status, OLD.expires_at) THEN
        RETURN NEW;
    END IF;
    IF OLD.response_status IS NOT NULL AND OLD.expires_at > now() THEN
        RAISE EXCEPTION 'api: a finished Idempotency-Key is kept as it is until it expires (%)', OLD.expires_at
            USING ERRCODE = 'LP006';
    END IF;
    RETURN CASE WHEN TG_OP = 'DELETE' THEN OLD ELSE NEW END;
END;
$$;

-- The status rules of 0021, with erased: reached only from deprovisioned, only by account_erase().
CREATE OR REPLACE FUNCTION trg_before_account_status_change() RETURNS trigger
    LANGUAGE plpgsql SET search_path = public, pg_temp
AS $$
DECLARE
    ts timestamptz := now();
BEGIN
    IF NEW.status = 'erased' THEN
        IF OLD.status <> 'deprovisioned' THEN
            RAISE EXCEPTION 'accounts: account % is not deprovisioned; only a deprovisioned account is erased', OLD.id
                USING ERRCODE = 'LA005';
        END IF;
        IF erasure_account() IS DISTINCT FROM OLD.id THEN
            RAISE EXCEPTION 'accounts: account % is erased only by account_erase(), which blanks every copy of its data', OLD.id
                USING ERRCODE = 'LA008';
        END IF;
        NEW.status_changed_at := ts;
        RETURN NEW;
    END IF;
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

-- An erased account takes no change at all, and no account is made erased.
CREATE FUNCTION trg_before_account_erased_kept() RETURNS trigger
    LANGUAGE plpgsql SET search_path = public, pg_temp
AS $$
BEGIN
    IF TG_OP = 'INSERT' THEN
        RAISE EXCEPTION 'accounts: a new account cannot be erased; deprovision it, then erase it'
            USING ERRCODE = 'LA005';
    END IF;
    RAISE EXCEPTION 'accounts: account % is erased; it takes no change', OLD.id USING ERRCODE = 'LA008';
END;
$$;

CREATE TRIGGER before_account_erased_kept
    BEFORE UPDATE ON accounts
    FOR EACH ROW WHEN (OLD.status = 'erased')
    EXECUTE FUNCTION trg_before_account_erased_kept();

CREATE TRIGGER before_account_insert_erased
    BEFORE INSERT ON accounts
    FOR EACH ROW WHEN (NEW.status = 'erased')
    EXECUTE FUNCTION trg_before_account_erased_kept();

-- The erasure writes its own audit row and event (account_erase()); the row's change is not repeated
-- with the address in it.
CREATE OR REPLACE FUNCTION trg_after_account_update_audit() RETURNS trigger
    LANGUAGE plpgsql SECURITY DEFINER SET search_path = public, pg_temp
AS $$
DECLARE
    diff record := audit_diff(to_jsonb(OLD), to_jsonb(NEW));
BEGIN
    IF NEW.status = 'erased' THEN
        RETURN NULL;
    END IF;
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

CREATE OR REPLACE FUNCTION trg_after_account_update_outbox() RETURNS trigger
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
                       WHEN n.status = 'deprovisioned' THEN 'account.deprovisioned'
                       WHEN o.status = 'deprovisioned' THEN 'account.reprovisioned'
                       WHEN n.status = 'suspended' THEN 'account.suspended'
                       WHEN o.status = 'suspended' THEN 'account.unsuspended'
                       ELSE 'account.activated'
                   END AS event_type,
                   account_event_data(n) AS data,
                   1 AS rank
            FROM new_accounts n JOIN old_accounts o ON o.id = n.id
            WHERE n.status IS DISTINCT FROM o.status AND n.status <> 'erased'
            UNION ALL
            SELECT n.id, 'account.email_changed',
                   account_event_data(n) || jsonb_build_object('previous_email', o.email),
                   2
            FROM new_accounts n JOIN old_accounts o ON o.id = n.id
            WHERE n.email IS DISTINCT FROM o.email AND n.status <> 'erased'
        ) changes
        GROUP BY event_type
        ORDER BY min(rank), event_type
    LOOP
        PERFORM outbox_append_many('account', change.ids, change.event_type, change.datas);
    END LOOP;
    RETURN NULL;
END;
$$;

CREATE OR REPLACE FUNCTION trg_after_account_deprovision() RETURNS trigger
    LANGUAGE plpgsql SET search_path = public, pg_temp
AS $$
BEGIN
    IF NEW.status = 'erased' THEN
        RETURN NULL;  -- account_erase() has deleted its tokens
    ELSIF NEW.status = 'deprovisioned' THEN
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

-- No token and no node assignment for an erased account (the existing insert triggers have locked
-- the account's row FOR SHARE before these run: an erasure waits for the insert, then deletes it).
CREATE FUNCTION trg_before_insert_account_erased() RETURNS trigger
    LANGUAGE plpgsql SET search_path = public, pg_temp
AS $$
BEGIN
    IF EXISTS (SELECT FROM accounts WHERE id = NEW.account AND status = 'erased') THEN
        IF TG_TABLE_NAME = 'tokens' THEN
            RAISE EXCEPTION 'tokens: account % is erased; no token is issued for it', NEW.account
                USING ERRCODE = 'LT009';
        END IF;
        RAISE EXCEPTION 'nodes: account % is erased; it gets no node', NEW.account
            USING ERRCODE = 'LN004', HINT = 'invalid-generation';
    END IF;
    RETURN NEW;
END;
$$;

CREATE TRIGGER before_token_insert_account_live_erased
    BEFORE INSERT ON tokens
    FOR EACH ROW EXECUTE FUNCTION trg_before_insert_account_erased();

CREATE TRIGGER before_node_assignment_insert_erased
    BEFORE INSERT ON node_assignments
    FOR EACH ROW EXECUTE FUNCTION trg_before_insert_account_erased();

-- Blank the copies of ``identifiers`` in the audit rows ``condition`` picks (a WHERE clause over
-- audit_events e, with $1 the erased account's id as text); where the person acted (not staff, not a
-- client), the row's IP address and browser go too, and the person is named "account #N (erased)".
-- account_erase()'s own step, in its marked transaction (the append-only trigger refuses it elsewhere).
-- How many rows it blanked.
CREATE FUNCTION erasure_blank_audit_rows(condition text, aggregate text, identifiers text[]) RETURNS bigint
    LANGUAGE plpgsql SET search_path = public, pg_temp
AS $$
DECLARE
    blanked bigint;
BEGIN
    EXECUTE format($sql$
        UPDATE audit_events e
        SET reason = erasure_scrub_text(e.reason, $2),
            diff_before = erasure_scrub_json(e.diff_before, $2),
            diff_after = erasure_scrub_json(e.diff_after, $2),
            path = erasure_scrub_text(e.path, $2),
            actor_display = CASE WHEN e.actor_id = 'account:' || $1 THEN 'account #' || $1 || ' (erased)'
                                 ELSE erasure_scrub_text(e.actor_display, $2) END,
            actor_ip = CASE WHEN e.actor_id LIKE 'staff:%%' OR e.actor_id LIKE 'api-client:%%' THEN e.actor_ip END,
            actor_user_agent = CASE WHEN e.actor_id LIKE 'staff:%%' OR e.actor_id LIKE 'api-client:%%'
                                    THEN e.actor_user_agent END
        WHERE %s$sql$, condition) USING aggregate, identifiers;
    GET DIAGNOSTICS blanked = ROW_COUNT;
    RETURN blanked;
END;
$$;
REVOKE EXECUTE ON FUNCTION erasure_blank_audit_rows(text, text, text[]) FROM PUBLIC;

-- The identifiers of account ``p_account``, lower case: its address and login now, and every earlier
-- one its trail or its events recorded. account_erase() blanks their copies; the Python service reads
-- them first for its pass over Django's tables (accounts/erasure.py).
CREATE FUNCTION account_erasure_identifiers(p_account bigint) RETURNS text[]
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

-- Of ``identifiers`` (account ``p_account``'s), those no other account that is not erased holds as its
-- address or login.
CREATE FUNCTION account_erasure_owned(identifiers text[], p_account bigint) RETURNS text[]
    LANGUAGE sql STABLE SECURITY DEFINER SET search_path = public, pg_temp
AS $$
    SELECT coalesce(array_agg(i), '{}')
    FROM unnest(identifiers) i
    WHERE NOT EXISTS (SELECT FROM accounts a
                      WHERE a.id <> p_account AND a.status <> 'erased' AND (lower(a.email) = i OR lower(a.login) = i))
$$;

-- Erase account ``p_account``, which must be deprovisioned (LA005 otherwise; LA009 if there is no such
-- account). Returns what it did, as counts (the erasure's own audit row has them too), or NULL when
-- the account was already erased (nothing to do: a retry). The actor and the reason are the audit
-- context's, as for every other change (platform_events/audit/context.py); the reason is kept
-- scrubbed too.
CREATE FUNCTION account_erase(p_account bigint) RETURNS jsonb
    LANGUAGE plpgsql SECURITY DEFINER SET search_path = public, pg_temp
AS $$
DECLARE
    account_status account_status;
    identifiers text[];
    owned text[];
    aggregate text := p_account::text;
    done jsonb := '{}';
    n bigint;
BEGIN
    -- The tokens first, then the account: the order a consumption takes them in (its row, then its
    -- account's), so that the two never wait for each other.
    PERFORM FROM tokens WHERE account = p_account ORDER BY id FOR UPDATE;
    SELECT status INTO account_status FROM accounts WHERE id = p_account FOR UPDATE;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'accounts: account % does not exist', p_account USING ERRCODE = 'LA009';
    ELSIF account_status = 'erased' THEN
        RETURN NULL;
    ELSIF account_status <> 'deprovisioned' THEN
        RAISE EXCEPTION 'accounts: account % is not deprovisioned; only a deprovisioned account is erased', p_account
            USING ERRCODE = 'LA005';
    END IF;

    identifiers := account_erasure_identifiers(p_account);
    -- Those no other account holds: the ones erased wherever they appear. An address another account
    -- also has (a sign-up never activated shares it; the runtime role may make such a decoy) is that
    -- account's too, and is blanked only in this account's own rows.
    owned := account_erasure_owned(identifiers, p_account);

    INSERT INTO erasure_in_progress (account) VALUES (p_account);
    -- Every row this transaction writes from here on gives the reason scrubbed.
    PERFORM set_config('lifecycle.reason', coalesce(erasure_scrub_text(audit_setting('reason'), identifiers), ''), true);

    -- What is still due about it is never sent; what was sent keeps no excerpt of the answer. One being
    -- sent right now (its lease running) is left to finish: cancelled under the sender, it would no
    -- longer hold back account.erased, which could then arrive first. Its answer's excerpt is dropped
    -- when it is recorded (trg_before_webhook_delivery_record_erased), and a failure ends it cancelled.
    UPDATE webhook_deliveries SET status = 'CANCELLED', claim = NULL, lease_until = NULL
    WHERE event_id IN (SELECT id FROM outbox_events WHERE aggregate_type = 'account' AND aggregate_id = aggregate)
      AND status IN ('PENDING', 'FAILED') AND (lease_until IS NULL OR lease_until <= now());
    GET DIAGNOSTICS n = ROW_COUNT;
    done := done || jsonb_build_object('deliveries_cancelled', n);
    UPDATE webhook_deliveries SET http_response_body_excerpt = NULL
    WHERE event_id IN (SELECT id FROM outbox_events WHERE aggregate_type = 'account' AND aggregate_id = aggregate)
      AND http_response_body_excerpt IS NOT NULL;
    UPDATE event_publications SET status = 'CANCELLED', claim = NULL, lease_until = NULL
    WHERE event_id IN (SELECT id FROM outbox_events WHERE aggregate_type = 'account' AND aggregate_id = aggregate)
      AND status = 'PENDING' AND (lease_until IS NULL OR lease_until <= now());
    GET DIAGNOSTICS n = ROW_COUNT;
    done := done || jsonb_build_object('publications_cancelled', n);

    UPDATE outbox_events SET payload = erasure_scrub_json(payload, identifiers)
    WHERE aggregate_type = 'account' AND aggregate_id = aggregate AND erasure_mentions(payload::text, identifiers);
    GET DIAGNOSTICS n = ROW_COUNT;
    done := done || jsonb_build_object('events_blanked', n);

    DELETE FROM tokens WHERE account = p_account;
    GET DIAGNOSTICS n = ROW_COUNT;
    done := done || jsonb_build_object('tokens_deleted', n);
    DELETE FROM account_passwords WHERE account = p_account;

    -- The trail: the rows about the account, its tokens and its events' deliveries, and the rows it
    -- acted in, keep every column but the copies of its identifiers. Four indexed statements rather
    -- than one over their union: a row found twice is blanked twice, which changes nothing the second time.
    n := erasure_blank_audit_rows($q$e.resource_type = 'account' AND e.resource_id = $1$q$, aggregate, identifiers)
       + erasure_blank_audit_rows(
             $q$e.resource_type = 'token' AND coalesce(e.diff_after ->> 'account', e.diff_before ->> 'account') = $1$q$,
             aggregate, identifiers)
       + erasure_blank_audit_rows($q$e.actor_id = 'account:' || $1$q$, aggregate, identifiers)
       + erasure_blank_audit_rows(
             $q$e.resource_type = 'webhook_delivery'
                AND e.resource_id IN (SELECT d.id::text FROM webhook_deliveries d JOIN outbox_events o ON o.id = d.event_id
                                      WHERE o.aggregate_type = 'account' AND o.aggregate_id = $1)$q$,
             aggregate, identifiers);
    done := done || jsonb_build_object('audit_rows_blanked', n);
    -- The sweep reads the rows that have a reason (audit_events_with_reason_idx); its test is written out
    -- here (a function with its own search_path is never inlined, and a call per row costs more).
    UPDATE audit_events SET reason = erasure_scrub_text(reason, owned)
    WHERE reason IS NOT NULL AND EXISTS (SELECT FROM unnest(owned) i WHERE strpos(lower(reason), i) > 0);

    -- Free text staff typed elsewhere: an API client's revocation, a webhook endpoint's description and
    -- why it was disabled; then the trail's rows of those (their changes just made included).
    UPDATE api_clients SET revoked_reason = erasure_scrub_text(revoked_reason, owned)
    WHERE revoked_reason IS NOT NULL AND EXISTS (SELECT FROM unnest(owned) i WHERE strpos(lower(revoked_reason), i) > 0);
    UPDATE webhook_subscriptions
    SET description = erasure_scrub_text(description, owned), disabled_reason = erasure_scrub_text(disabled_reason, owned)
    WHERE EXISTS (SELECT FROM unnest(owned) i
                  WHERE strpos(lower(coalesce(description, '') || ' ' || coalesce(disabled_reason, '')), i) > 0);
    UPDATE audit_events
    SET diff_before = erasure_scrub_json(diff_before, owned), diff_after = erasure_scrub_json(diff_after, owned)
    WHERE resource_type IN ('api_client', 'webhook_subscription')
      AND EXISTS (SELECT FROM unnest(owned) i
                  WHERE strpos(lower(coalesce(diff_before::text, '') || coalesce(diff_after::text, '')), i) > 0);

    -- Stored answers: those about this account, and any other that quotes what it alone held; a key
    -- the client made of one of them goes with its answer.
    WITH blanked AS (
        UPDATE idempotency_keys SET response_body = erasure_scrub_json(response_body, identifiers)
        WHERE response_body ->> 'id' = aggregate OR response_body ->> 'account_id' = aggregate
        RETURNING 1
    )
    SELECT count(*) INTO n FROM blanked;
    WITH blanked AS (
        UPDATE idempotency_keys SET response_body = erasure_scrub_json(response_body, owned)
        WHERE response_body IS NOT NULL
          AND EXISTS (SELECT FROM unnest(owned) i WHERE strpos(lower(response_body::text), i) > 0)
        RETURNING 1
    )
    SELECT n + count(*) INTO n FROM blanked;
    done := done || jsonb_build_object('idempotency_answers_blanked', n);
    DELETE FROM idempotency_keys WHERE EXISTS (SELECT FROM unnest(owned) i WHERE strpos(lower(key), i) > 0);
    GET DIAGNOSTICS n = ROW_COUNT;
    done := done || jsonb_build_object('idempotency_keys_deleted', n);

    UPDATE accounts SET status = 'erased', email = NULL, login = NULL WHERE id = p_account;
    PERFORM audit_record('account.erased', 'account', aggregate, jsonb_build_object('status', 'deprovisioned'),
                         jsonb_build_object('status', 'erased') || done);
    PERFORM outbox_append_many('account', ARRAY[aggregate], 'account.erased', ARRAY[jsonb_build_object('id', p_account)]);

    DELETE FROM erasure_in_progress WHERE txid = pg_current_xact_id();
    RETURN done;
END;
$$;
