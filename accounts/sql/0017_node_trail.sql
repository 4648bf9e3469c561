-- The node tables' trail without a switch any session can set.
--
-- The node and assignment audit triggers used to stay silent while lifecycle.node_routine was 'on',
-- a setting the services set around a client's moves, and which any session of the runtime role can
-- SET as well: a node's URL changed or a node's assignments deleted under it left no row. services
-- had no audit at all. Now:
--
-- * A client's routine moves (first allocation, a fresh node after a replacement, new keys, numbers
--   moving forwards, replacement, retirement, purge) go through the node_routine_* functions below:
--   SECURITY DEFINER, owned by the migration role, each one move with its own checks, callable by the
--   runtime role. Their statements run as the owner, called from another login role; that is how the
--   triggers tell a routine move (node_routine_move(), in each trigger's WHEN): no session setting, no
--   SET ROLE of the runtime role can make it true. A role that is both owner and runtime (DATABASE_URL
--   without DATABASE_OWNER_URL) is never "another login role": there every move is audited in full.
-- * Even a routine move writes a compact row when it changes the client's own state or place: new
--   keys (node_assignment.keys_changed), a generation or keys_changed_at moving up
--   (node_assignment.generation_raised), a retirement (node_assignment.retired), a live row replaced
--   other than by new keys (node_assignment.replaced), a live row deleted (node_assignment.deleted).
--   The actor is the one the application names (an API client: api-client:<id>, SERVICE), beside the
--   database role (db_user). No client_state, which is the hash of the client's key: only uids, nodes
--   and numbers. An allocation that continues the account's keys and numbers (first sight, a fresh
--   node), the purge's deletion of a replaced row and its retry time write nothing: one row per sync
--   would drown the trail.
-- * Every other change, by any role, is audited in full as before (node.*, node_assignment.*), and now
--   services' too (service.added, service.changed, service.removed).

-- True while the statement runs inside a SECURITY DEFINER function of the tables' owner called by
-- another login role: only the node_routine_* functions below write these tables that way. Evaluated
-- in a trigger's WHEN, where current_user is still the statement's (not the trigger function's owner).
CREATE FUNCTION node_routine_move() RETURNS boolean
    LANGUAGE sql STABLE SET search_path = public, pg_temp
AS $$
    SELECT current_user <> session_user
       AND current_user = (SELECT pg_get_userbyid(relowner) FROM pg_class WHERE oid = 'node_assignments'::regclass)
$$;

-- Nodes: audited unless changed inside a routine move (the allocator's released slots); the load the
-- assignment triggers keep is depth 2, bookkeeping as before.
CREATE OR REPLACE FUNCTION trg_after_node_audit() RETURNS trigger
    LANGUAGE plpgsql SECURITY DEFINER SET search_path = public, pg_temp
AS $$
DECLARE
    shown text[] := ARRAY['service', 'node', 'capacity', 'available', 'current_load', 'downed', 'backoff'];
    before jsonb;
    after jsonb;
    diff record;
BEGIN
    IF pg_trigger_depth() > 1 THEN
        RETURN NULL;
    END IF;
    IF TG_OP = 'INSERT' THEN
        after := (SELECT jsonb_object_agg(key, value) FROM jsonb_each(to_jsonb(NEW)) WHERE key = ANY(shown));
        PERFORM audit_record('node.added', 'node', NEW.id::text, NULL, after);
        RETURN NULL;
    END IF;
    before := (SELECT jsonb_object_agg(key, value) FROM jsonb_each(to_jsonb(OLD)) WHERE key = ANY(shown));
    IF TG_OP = 'DELETE' THEN
        PERFORM audit_record('node.removed', 'node', OLD.id::text, before, NULL);
        RETURN NULL;
    END IF;
    after := (SELECT jsonb_object_agg(key, value) FROM jsonb_each(to_jsonb(NEW)) WHERE key = ANY(shown));
    IF before IS NOT DISTINCT FROM after THEN
        RETURN NULL;
    END IF;
    diff := audit_diff(before, after);
    PERFORM audit_record('node.changed', 'node', NEW.id::text, diff.diff_before, diff.diff_after);
    RETURN NULL;
END;
$$;

DROP TRIGGER after_node_audit ON nodes;
CREATE TRIGGER after_node_audit
    AFTER INSERT OR UPDATE OR DELETE ON nodes
    FOR EACH ROW
    WHEN (NOT node_routine_move())
    EXECUTE FUNCTION trg_after_node_audit();

-- Assignments changed outside a routine move: as 0014_nodes.sql audited them, without the setting.
CREATE OR REPLACE FUNCTION trg_after_node_assignment_audit() RETURNS trigger
    LANGUAGE plpgsql SECURITY DEFINER SET search_path = public, pg_temp
AS $$
BEGIN
    -- Depth 2 and more: a node's deletion setting its rows' node to none (node.removed says it).
    IF pg_trigger_depth() > 1 THEN
        RETURN NULL;
    END IF;
    IF TG_OP = 'INSERT' THEN
        PERFORM audit_record_many('node_assignment.created', 'account', array_agg(r.account::text ORDER BY r.uid), NULL,
                                  array_agg(jsonb_build_object('uid', r.uid, 'service', s.service, 'node', n.node,
                                                               'generation', r.generation) ORDER BY r.uid))
        FROM new_rows r JOIN services s ON s.id = r.service LEFT JOIN nodes n ON n.id = r.node
        HAVING count(*) > 0;
    ELSIF TG_OP = 'DELETE' THEN
        PERFORM audit_record_many('node_assignment.deleted', 'account', array_agg(r.account::text ORDER BY r.uid),
                                  array_agg(jsonb_build_object('uid', r.uid, 'node', r.node) ORDER BY r.uid), NULL)
        FROM old_rows r
        HAVING count(*) > 0;
    ELSE
        PERFORM audit_record('node.unassigned', 'node', n.node::text, NULL, jsonb_build_object('assignments', n.count))
        FROM (SELECT o.node, count(*) FROM old_rows o JOIN new_rows r USING (uid)
              WHERE o.replaced_at IS NULL AND r.replaced_at IS NOT NULL AND o.node IS NOT NULL
              GROUP BY o.node ORDER BY o.node) n;
        PERFORM audit_record_many('node_assignment.changed', 'account', array_agg(r.account::text ORDER BY r.uid),
                                  array_agg(jsonb_build_object('uid', o.uid, 'generation', o.generation,
                                                               'keys_changed_at', o.keys_changed_at) ORDER BY r.uid),
                                  array_agg(jsonb_build_object('uid', r.uid, 'generation', r.generation,
                                                               'keys_changed_at', r.keys_changed_at) ORDER BY r.uid))
        FROM old_rows o JOIN new_rows r USING (uid)
        WHERE (o.generation, o.keys_changed_at) IS DISTINCT FROM (r.generation, r.keys_changed_at)
        HAVING count(*) > 0;
    END IF;
    RETURN NULL;
END;
$$;

-- Assignments changed by a routine move: only the client's own state changing, one compact row each.
CREATE FUNCTION trg_after_node_assignment_routine_audit() RETURNS trigger
    LANGUAGE plpgsql SECURITY DEFINER SET search_path = public, pg_temp
AS $$
DECLARE
    r record;
BEGIN
    IF pg_trigger_depth() > 1 THEN
        RETURN NULL;
    END IF;
    IF TG_OP = 'INSERT' THEN
        -- A row after earlier ones of the account: new keys, or numbers above the newest row's. (A first
        -- row, or a fresh node for the same keys and numbers, is the allocation every sync may make.)
        FOR r IN
            SELECT n.uid, n.account, n.generation, n.keys_changed_at, n.client_state <> p.client_state AS new_keys,
                   s.service, nd.node, p.uid AS before_uid, p.generation AS before_generation,
                   p.keys_changed_at AS before_keys_changed_at
            FROM new_rows n
            JOIN services s ON s.id = n.service
            LEFT JOIN nodes nd ON nd.id = n.node
            JOIN LATERAL (SELECT o.uid, o.generation, o.keys_changed_at, o.client_state FROM node_assignments o
                          WHERE o.service = n.service AND o.account = n.account AND o.uid <> n.uid
                          ORDER BY o.generation DESC, o.created_at DESC, o.uid DESC LIMIT 1) p ON true
            WHERE n.client_state <> p.client_state OR n.generation > p.generation
               OR coalesce(n.keys_changed_at, 0) > coalesce(p.keys_changed_at, 0)
            ORDER BY n.uid
        LOOP
            PERFORM audit_record(
                CASE WHEN r.new_keys THEN 'node_assignment.keys_changed' ELSE 'node_assignment.generation_raised' END,
                'account', r.account::text,
                jsonb_build_object('uid', r.before_uid, 'generation', r.before_generation,
                                   'keys_changed_at', r.before_keys_changed_at),
                jsonb_build_object('uid', r.uid, 'service', r.service, 'node', r.node, 'generation', r.generation,
                                   'keys_changed_at', r.keys_changed_at));
        END LOOP;
    ELSIF TG_OP = 'DELETE' THEN
        -- Purge deletes replaced rows; a live one deleted is the account losing its data's place.
        PERFORM audit_record_many('node_assignment.deleted', 'account', array_agg(d.account::text ORDER BY d.uid),
                                  array_agg(jsonb_build_object('uid', d.uid, 'node', d.node) ORDER BY d.uid), NULL)
        FROM old_rows d
        WHERE d.replaced_at IS NULL
        HAVING count(*) > 0;
    ELSE
        -- Numbers moving up (a replacement alone is routine); the tombstone generation is a retirement.
        FOR r IN
            SELECT n.uid, n.account, n.generation, n.keys_changed_at, o.generation AS before_generation,
                   o.keys_changed_at AS before_keys_changed_at
            FROM old_rows o JOIN new_rows n USING (uid)
            WHERE n.generation > o.generation OR coalesce(n.keys_changed_at, -1) > coalesce(o.keys_changed_at, -1)
            ORDER BY n.uid
        LOOP
            PERFORM audit_record(
                CASE WHEN r.generation = 9223372036854775807 THEN 'node_assignment.retired'
                     ELSE 'node_assignment.generation_raised' END,
                'account', r.account::text,
                jsonb_build_object('uid', r.uid, 'generation', r.before_generation,
                                   'keys_changed_at', r.before_keys_changed_at),
                jsonb_build_object('uid', r.uid, 'generation', r.generation, 'keys_changed_at', r.keys_changed_at));
        END LOOP;
    END IF;
    RETURN NULL;
END;
$$;

DROP TRIGGER after_node_assignment_insert_audit ON node_assignments;
DROP TRIGGER after_node_assignment_update_audit ON node_assignments;
DROP TRIGGER after_node_assignment_delete_audit ON node_assignments;

CREATE TRIGGER after_node_assignment_insert_audit
    AFTER INSERT ON node_assignments
    REFERENCING NEW TABLE AS new_rows
    FOR EACH STATEMENT
    WHEN (NOT node_routine_move())
    EXECUTE FUNCTION trg_after_node_assignment_audit();

CREATE TRIGGER after_node_assignment_update_audit
    AFTER UPDATE ON node_assignments
    REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
    FOR EACH STATEMENT
    WHEN (NOT node_routine_move())
    EXECUTE FUNCTION trg_after_node_assignment_audit();

CREATE TRIGGER after_node_assignment_delete_audit
    AFTER DELETE ON node_assignments
    REFERENCING OLD TABLE AS old_rows
    FOR EACH STATEMENT
    WHEN (NOT node_routine_move())
    EXECUTE FUNCTION trg_after_node_assignment_audit();

CREATE TRIGGER after_node_assignment_insert_routine_audit
    AFTER INSERT ON node_assignments
    REFERENCING NEW TABLE AS new_rows
    FOR EACH STATEMENT
    WHEN (node_routine_move())
    EXECUTE FUNCTION trg_after_node_assignment_routine_audit();

CREATE TRIGGER after_node_assignment_update_routine_audit
    AFTER UPDATE ON node_assignments
    REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
    FOR EACH STATEMENT
    WHEN (node_routine_move())
    EXECUTE FUNCTION trg_after_node_assignment_routine_audit();

CREATE TRIGGER after_node_assignment_delete_routine_audit
    AFTER DELETE ON node_assignments
    REFERENCING OLD TABLE AS old_rows
    FOR EACH STATEMENT
    WHEN (node_routine_move())
    EXECUTE FUNCTION trg_after_node_assignment_routine_audit();

-- Services: every change audited, by whoever makes it (no client moves them).
CREATE FUNCTION trg_after_service_audit() RETURNS trigger
    LANGUAGE plpgsql SECURITY DEFINER SET search_path = public, pg_temp
AS $$
DECLARE
    diff record;
BEGIN
    IF TG_OP = 'INSERT' THEN
        PERFORM audit_record('service.added', 'service', NEW.id::text, NULL,
                             jsonb_build_object('service', NEW.service, 'pattern', NEW.pattern));
    ELSIF TG_OP = 'DELETE' THEN
        PERFORM audit_record('service.removed', 'service', OLD.id::text,
                             jsonb_build_object('service', OLD.service, 'pattern', OLD.pattern), NULL);
    ELSE
        diff := audit_diff(jsonb_build_object('id', OLD.id, 'service', OLD.service, 'pattern', OLD.pattern),
                           jsonb_build_object('id', NEW.id, 'service', NEW.service, 'pattern', NEW.pattern));
        IF diff.diff_after IS NOT NULL THEN
            PERFORM audit_record('service.changed', 'service', NEW.id::text, diff.diff_before, diff.diff_after);
        END IF;
    END IF;
    RETURN NULL;
END;
$$;

CREATE TRIGGER after_service_audit
    AFTER INSERT OR UPDATE OR DELETE ON services
    FOR EACH ROW
    EXECUTE FUNCTION trg_after_service_audit();

-- The routine moves, one each (accounts/nodes/services.py calls them). SECURITY DEFINER, so their
-- statements are node_routine_move()'s; a fixed search_path, as every SECURITY DEFINER needs. Each
-- does one thing a client's sync, the consumer or the purge does, with the rules of 0014_nodes.sql's
-- triggers still applying: numbers never go backwards, no client state reused, one live row.

-- A node for the account, the least-loaded (never a node of the caller's choosing: an operator's
-- placement calls node_allocate() itself and is audited). The release rate is capped at the whole
-- capacity.
CREATE FUNCTION node_routine_allocate(p_service integer, p_account bigint, p_generation bigint,
                                      p_client_state text, p_keys_changed_at bigint, p_release_rate numeric,
                                      p_created_at timestamptz DEFAULT NULL)
    RETURNS node_assignments
    LANGUAGE plpgsql SECURITY DEFINER SET search_path = public, pg_temp
AS $$
DECLARE
    made node_assignments;
BEGIN
    SELECT * INTO made FROM node_allocate(p_service, p_account, p_generation, p_client_state, p_keys_changed_at, NULL,
                                          least(greatest(p_release_rate, 0), 1), p_created_at);
    RETURN made;
END;
$$;

-- New keys (tokenserver's update_user with a new client_state): the account's live rows replaced, then
-- a row with the new keys on the node of assignment p_uid (the account's), or the least-loaded node if
-- that one is gone. Audited as node_assignment.keys_changed by the routine trigger.
CREATE FUNCTION node_routine_rekey(p_service integer, p_account bigint, p_uid bigint, p_generation bigint,
                                   p_client_state text, p_keys_changed_at bigint, p_release_rate numeric)
    RETURNS node_assignments
    LANGUAGE plpgsql SECURITY DEFINER SET search_path = public, pg_temp
AS $$
DECLARE
    target bigint;
    replaced timestamptz;
    made node_assignments;
BEGIN
    -- The account's rows, locked: concurrent updates of one account take turns.
    PERFORM 1 FROM node_assignments WHERE service = p_service AND account = p_account ORDER BY uid FOR UPDATE;
    SELECT node INTO target FROM node_assignments WHERE uid = p_uid AND service = p_service AND account = p_account;
    WITH r AS (
        UPDATE node_assignments a SET replaced_at = greatest(clock_timestamp(), a.created_at)
        WHERE a.service = p_service AND a.account = p_account AND a.replaced_at IS NULL
        RETURNING a.replaced_at
    )
    SELECT max(replaced_at) INTO replaced FROM r;
    IF target IS NULL THEN
        SELECT * INTO made FROM node_allocate(p_service, p_account, p_generation, p_client_state, p_keys_changed_at,
                                              NULL, least(greatest(p_release_rate, 0), 1), NULL);
    ELSE
        -- Same node, new keys: the node keeps the account (tokenserver), whatever its load.
        INSERT INTO node_assignments (service, account, node, generation, client_state, keys_changed_at, created_at)
        VALUES (p_service, p_account, target, p_generation, p_client_state, p_keys_changed_at,
                greatest(clock_timestamp(), replaced))
        RETURNING * INTO made;
    END IF;
    RETURN made;
END;
$$;

-- Numbers forwards on the live row (tokenserver's update_user without new keys); a lower one is
-- ignored. Returns the rows changed. A rise is audited as node_assignment.generation_raised.
CREATE FUNCTION node_routine_advance(p_service integer, p_account bigint, p_generation bigint,
                                     p_keys_changed_at bigint)
    RETURNS integer
    LANGUAGE plpgsql SECURITY DEFINER SET search_path = public, pg_temp
AS $$
DECLARE
    changed integer;
BEGIN
    UPDATE node_assignments
    SET generation = coalesce(p_generation, generation),
        keys_changed_at = coalesce(p_keys_changed_at, keys_changed_at)
    WHERE service = p_service AND account = p_account AND replaced_at IS NULL
      AND generation <= coalesce(p_generation, generation)
      AND coalesce(keys_changed_at, 0) <= coalesce(p_keys_changed_at, keys_changed_at, 0);
    GET DIAGNOSTICS changed = ROW_COUNT;
    RETURN changed;
END;
$$;

-- tokenserver's replace_user_records: the account's live rows replaced (at p_at, or now), so its next
-- read gets a fresh node. Returns the latest time used (NULL: there was no live row). The account
-- leaves its node: audited (node_assignment.replaced, one row per row replaced), as node_unassign's
-- replacements are; a key change's replacement (node_routine_rekey) is its keys_changed row.
CREATE FUNCTION node_routine_replace(p_service integer, p_account bigint, p_at timestamptz DEFAULT NULL)
    RETURNS timestamptz
    LANGUAGE plpgsql SECURITY DEFINER SET search_path = public, pg_temp
AS $$
DECLARE
    r record;
    latest timestamptz;
BEGIN
    FOR r IN
        UPDATE node_assignments a SET replaced_at = greatest(coalesce(p_at, clock_timestamp()), a.created_at)
        WHERE a.service = p_service AND a.account = p_account AND a.replaced_at IS NULL
        RETURNING a.uid, a.node, a.replaced_at
    LOOP
        PERFORM audit_record('node_assignment.replaced', 'account', p_account::text,
                             jsonb_build_object('uid', r.uid, 'node', r.node), NULL);
        latest := greatest(latest, r.replaced_at);
    END LOOP;
    RETURN latest;
END;
$$;

-- tokenserver's replace_user_record: one row replaced (at p_at, or now). A replaced one gets the new
-- time too, silently, but never an earlier one (the purge retries a failed row a grace period later:
-- its time only moves on), unless p_live_only; a live one leaves its node, audited as
-- node_routine_replace() says.
CREATE FUNCTION node_routine_replace_row(p_uid bigint, p_at timestamptz DEFAULT NULL, p_live_only boolean DEFAULT false)
    RETURNS void
    LANGUAGE plpgsql SECURITY DEFINER SET search_path = public, pg_temp
AS $$
DECLARE
    was node_assignments;
BEGIN
    SELECT * INTO was FROM node_assignments WHERE uid = p_uid FOR UPDATE;
    IF NOT FOUND OR (was.replaced_at IS NOT NULL AND p_live_only) THEN
        RETURN;
    END IF;
    UPDATE node_assignments SET replaced_at = greatest(coalesce(p_at, clock_timestamp()), created_at, replaced_at)
    WHERE uid = p_uid;
    IF was.replaced_at IS NULL THEN
        PERFORM audit_record('node_assignment.replaced', 'account', was.account::text,
                             jsonb_build_object('uid', was.uid, 'node', was.node), NULL);
    END IF;
END;
$$;

-- tokenserver's retire_user: every live row of the account replaced with the tombstone generation.
-- Returns the rows retired; each is audited (node_assignment.retired).
CREATE FUNCTION node_routine_retire(p_account bigint)
    RETURNS integer
    LANGUAGE plpgsql SECURITY DEFINER SET search_path = public, pg_temp
AS $$
DECLARE
    retired integer;
BEGIN
    UPDATE node_assignments SET replaced_at = clock_timestamp(), generation = 9223372036854775807
    WHERE account = p_account AND replaced_at IS NULL;
    GET DIAGNOSTICS retired = ROW_COUNT;
    RETURN retired;
END;
$$;

-- tokenserver's delete_user_record (the purge): the row goes and its slot is freed. A live row
-- deleted this way is audited (node_assignment.deleted); a replaced one is the purge's routine.
CREATE FUNCTION node_routine_delete(p_uid bigint)
    RETURNS void
    LANGUAGE sql SECURITY DEFINER SET search_path = public, pg_temp
AS $$
    DELETE FROM node_assignments WHERE uid = p_uid
$$;

-- node_allocate as 0016_node_allocate_order.sql made it, without setting lifecycle.node_routine
-- around the release (nothing reads it any more).
CREATE OR REPLACE FUNCTION node_allocate(p_service integer, p_account bigint, p_generation bigint DEFAULT 0,
                                         p_client_state text DEFAULT '', p_keys_changed_at bigint DEFAULT NULL,
                                         p_node bigint DEFAULT NULL, p_release_rate numeric DEFAULT 0.1,
                                         p_created_at timestamptz DEFAULT NULL)
    RETURNS node_assignments
    LANGUAGE plpgsql SET search_path = public, pg_temp
AS $$
DECLARE
    chosen nodes;
    made node_assignments;
    held bigint[];
BEGIN
    -- Step 1: wait for a transaction changing the account's live row (it is replacing it), before
    -- holding any node; it is refused at the live-row index afterwards if that one placed it anew.
    PERFORM 1 FROM node_assignments
    WHERE service = p_service AND account = p_account AND replaced_at IS NULL FOR SHARE;
    IF p_node IS NOT NULL THEN
        SELECT * INTO chosen FROM nodes WHERE id = p_node AND service = p_service FOR UPDATE;
        IF NOT FOUND THEN
            RAISE EXCEPTION 'nodes: node % does not exist for service %', p_node, p_service USING ERRCODE = 'LN003';
        END IF;
        IF chosen.current_load >= chosen.capacity THEN
            RAISE EXCEPTION 'nodes: node % is full (% of %)', chosen.node, chosen.current_load, chosen.capacity
                USING ERRCODE = 'LN002';
        END IF;
    ELSE
        -- Step 2: the best candidate no other transaction holds; none: what it locked is let go.
        BEGIN
            SELECT * INTO STRICT chosen FROM nodes
            WHERE service = p_service AND available > 0 AND current_load < capacity AND NOT downed AND NOT backoff
            ORDER BY ln(nullif(current_load, 0)) / nullif(ln(capacity), 0) NULLS FIRST, capacity DESC, id
            LIMIT 1 FOR UPDATE SKIP LOCKED;
        EXCEPTION WHEN no_data_found THEN
            chosen := NULL;
        END;
        IF chosen.id IS NULL THEN
            -- Step 3: every node of the service that is up, in id order; then nothing more to wait for.
            SELECT array_agg(id) INTO held
            FROM (SELECT id FROM nodes WHERE service = p_service AND NOT downed ORDER BY id FOR UPDATE) up;
            SELECT * INTO chosen FROM nodes
            WHERE id = ANY(held) AND available > 0 AND current_load < capacity AND NOT downed AND NOT backoff
            ORDER BY ln(nullif(current_load, 0)) / nullif(ln(capacity), 0) NULLS FIRST, capacity DESC, id
            LIMIT 1;
            IF NOT FOUND THEN
                -- Releasing slots is the allocator's bookkeeping: inside node_routine_allocate() it is
                -- not audited; an operator's allocation (a direct call) is, release and all.
                UPDATE nodes
                SET available = least(ceil(capacity * p_release_rate)::int, capacity - current_load)
                WHERE id = ANY(held) AND available <= 0 AND capacity > current_load AND NOT downed;
                SELECT * INTO chosen FROM nodes
                WHERE id = ANY(held) AND available > 0 AND current_load < capacity AND NOT downed AND NOT backoff
                ORDER BY ln(nullif(current_load, 0)) / nullif(ln(capacity), 0) NULLS FIRST, capacity DESC, id
                LIMIT 1;
            END IF;
        END IF;
        IF chosen.id IS NULL THEN
            RAISE EXCEPTION 'nodes: no node of service % has capacity left', p_service USING ERRCODE = 'LN002';
        END IF;
    END IF;
    INSERT INTO node_assignments (service, account, node, generation, client_state, keys_changed_at, created_at)
    VALUES (p_service, p_account, chosen.id, p_generation, p_client_state, p_keys_changed_at,
            coalesce(p_created_at, clock_timestamp()))
    RETURNING * INTO made;
    RETURN made;
END;
$$;
