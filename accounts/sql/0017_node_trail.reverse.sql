-- The node tables' trail as 0014_nodes.sql and 0016_node_allocate_order.sql left it.

DROP TRIGGER after_service_audit ON services;
DROP FUNCTION trg_after_service_audit();

DROP TRIGGER after_node_assignment_insert_routine_audit ON node_assignments;
DROP TRIGGER after_node_assignment_update_routine_audit ON node_assignments;
DROP TRIGGER after_node_assignment_delete_routine_audit ON node_assignments;
DROP FUNCTION trg_after_node_assignment_routine_audit();

DROP TRIGGER after_node_assignment_insert_audit ON node_assignments;
DROP TRIGGER after_node_assignment_update_audit ON node_assignments;
DROP TRIGGER after_node_assignment_delete_audit ON node_assignments;
DROP TRIGGER after_node_audit ON nodes;

DROP FUNCTION node_routine_allocate(integer, bigint, bigint, text, bigint, numeric, timestamptz);
DROP FUNCTION node_routine_rekey(integer, bigint, bigint, bigint, text, bigint, numeric);
DROP FUNCTION node_routine_advance(integer, bigint, bigint, bigint);
DROP FUNCTION node_routine_replace(integer, bigint, timestamptz);
DROP FUNCTION node_routine_replace_row(bigint, timestamptz, boolean);
DROP FUNCTION node_routine_retire(bigint);
DROP FUNCTION node_routine_delete(bigint);

CREATE OR REPLACE FUNCTION trg_after_node_audit() RETURNS trigger
    LANGUAGE plpgsql SECURITY DEFINER SET search_path = public, pg_temp
AS $$
DECLARE
    shown text[] := ARRAY['service', 'node', 'capacity', 'available', 'current_load', 'downed', 'backoff'];
    before jsonb;
    after jsonb;
    diff record;
BEGIN
    IF pg_trigger_depth() > 1 OR audit_setting('node_routine') = 'on' THEN
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

CREATE TRIGGER after_node_audit
    AFTER INSERT OR UPDATE OR DELETE ON nodes
    FOR EACH ROW
    EXECUTE FUNCTION trg_after_node_audit();

CREATE OR REPLACE FUNCTION trg_after_node_assignment_audit() RETURNS trigger
    LANGUAGE plpgsql SECURITY DEFINER SET search_path = public, pg_temp
AS $$
BEGIN
    -- Depth 2 and more: a node's deletion setting its rows' node to none (node.removed says it).
    IF pg_trigger_depth() > 1 OR audit_setting('node_routine') = 'on' THEN
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

CREATE TRIGGER after_node_assignment_insert_audit
    AFTER INSERT ON node_assignments
    REFERENCING NEW TABLE AS new_rows
    FOR EACH STATEMENT
    EXECUTE FUNCTION trg_after_node_assignment_audit();

CREATE TRIGGER after_node_assignment_update_audit
    AFTER UPDATE ON node_assignments
    REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
    FOR EACH STATEMENT
    EXECUTE FUNCTION trg_after_node_assignment_audit();

CREATE TRIGGER after_node_assignment_delete_audit
    AFTER DELETE ON node_assignments
    REFERENCING OLD TABLE AS old_rows
    FOR EACH STATEMENT
    EXECUTE FUNCTION trg_after_node_assignment_audit();

DROP FUNCTION node_routine_move();

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
    routine text;
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
                -- Releasing slots is the allocator's bookkeeping, not an operator's change: not audited.
                routine := current_setting('lifecycle.node_routine', true);
                PERFORM set_config('lifecycle.node_routine', 'on', true);
                UPDATE nodes
                SET available = least(ceil(capacity * p_release_rate)::int, capacity - current_load)
                WHERE id = ANY(held) AND available <= 0 AND capacity > current_load AND NOT downed;
                PERFORM set_config('lifecycle.node_routine', coalesce(routine, ''), true);
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
