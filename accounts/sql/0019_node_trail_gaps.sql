-- What the node tables' trail (0017_node_trail.sql) did not see.
--
-- * A live row's node set to none by a statement of its own (0014's rule lets a row's node change to
--   none, for a node's deletion): the account's data left on a node no purge would tell, its slot never
--   given back, and no row in the trail, which compared the numbers only. Now only a node's deletion
--   does it (its foreign key's action, run inside the DELETE's trigger: pg_trigger_depth() 1).
-- * A replaced row's time moved outside a routine move: to 'infinity' its data stays on the node for
--   good, never past the grace period; back, it is purged at once. Now audited as node_assignment.changed
--   with the time before and after.
-- * The routine functions' times: node_routine_replace_row() moved a replaced row's time, silently, as
--   far as the caller asked ('infinity' too), where the purge's retry asks for now; node_routine_replace()
--   and node_routine_replace_row() replaced a live row at any time the caller gave (audited, but its row
--   says nothing of the time); and node_routine_allocate() dated a first allocation (silent) as the
--   caller asked, so a row created in the future was replaced in the future too. None goes past the
--   clock now: a row replaced at 'infinity' never passes the grace period, so the purge never tells its
--   node to delete the data.
-- * A node's id changed in place (one no assignment names yet): the trail names nodes by id, and the
--   audit trigger compares what it shows, not the id. Refused, as an assignment's uid is.

CREATE FUNCTION trg_before_node_assignment_node_unset() RETURNS trigger
    LANGUAGE plpgsql SET search_path = public, pg_temp
AS $$
BEGIN
    RAISE EXCEPTION 'nodes: assignment % keeps its node until the node is deleted (replace the assignment instead)',
        OLD.uid
        USING ERRCODE = 'LN004';
END;
$$;

CREATE TRIGGER before_node_assignment_node_unset
    BEFORE UPDATE OF node ON node_assignments
    FOR EACH ROW
    WHEN (OLD.node IS NOT NULL AND NEW.node IS NULL AND pg_trigger_depth() < 1)
    EXECUTE FUNCTION trg_before_node_assignment_node_unset();

-- 0017_node_trail.sql's audit of a change outside a routine move, with a replaced row's time.
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
        PERFORM audit_record_many(
            'node_assignment.changed', 'account', array_agg(c.account::text ORDER BY c.uid),
            array_agg(jsonb_build_object('uid', c.uid, 'generation', c.old_generation,
                                         'keys_changed_at', c.old_keys_changed_at)
                      || CASE WHEN c.moved THEN jsonb_build_object('replaced_at', c.old_replaced_at) ELSE '{}' END
                      ORDER BY c.uid),
            array_agg(jsonb_build_object('uid', c.uid, 'generation', c.generation, 'keys_changed_at', c.keys_changed_at)
                      || CASE WHEN c.moved THEN jsonb_build_object('replaced_at', c.replaced_at) ELSE '{}' END
                      ORDER BY c.uid))
        FROM (SELECT r.uid, r.account, r.generation, r.keys_changed_at, r.replaced_at,
                     o.generation AS old_generation, o.keys_changed_at AS old_keys_changed_at,
                     o.replaced_at AS old_replaced_at,
                     o.replaced_at IS NOT NULL AND r.replaced_at IS DISTINCT FROM o.replaced_at AS moved
              FROM old_rows o JOIN new_rows r USING (uid)) c
        WHERE (c.old_generation, c.old_keys_changed_at) IS DISTINCT FROM (c.generation, c.keys_changed_at) OR c.moved
        HAVING count(*) > 0;
    END IF;
    RETURN NULL;
END;
$$;

-- 0017_node_trail.sql's, a replaced row's new time at most now (the purge's retry asks for now).
CREATE OR REPLACE FUNCTION node_routine_replace_row(p_uid bigint, p_at timestamptz DEFAULT NULL,
                                                    p_live_only boolean DEFAULT false)
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
    IF was.replaced_at IS NULL THEN
        UPDATE node_assignments SET replaced_at = greatest(least(coalesce(p_at, clock_timestamp()), clock_timestamp()), created_at)
        WHERE uid = p_uid;
        PERFORM audit_record('node_assignment.replaced', 'account', was.account::text,
                             jsonb_build_object('uid', was.uid, 'node', was.node), NULL);
    ELSE
        UPDATE node_assignments
        SET replaced_at = greatest(least(coalesce(p_at, clock_timestamp()), clock_timestamp()), created_at, replaced_at)
        WHERE uid = p_uid;
    END IF;
END;
$$;

-- 0017_node_trail.sql's, a time at most now.
CREATE OR REPLACE FUNCTION node_routine_replace(p_service integer, p_account bigint, p_at timestamptz DEFAULT NULL)
    RETURNS timestamptz
    LANGUAGE plpgsql SECURITY DEFINER SET search_path = public, pg_temp
AS $$
DECLARE
    r record;
    latest timestamptz;
BEGIN
    FOR r IN
        UPDATE node_assignments a
        SET replaced_at = greatest(least(coalesce(p_at, clock_timestamp()), clock_timestamp()), a.created_at)
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

-- 0017_node_trail.sql's, a creation time at most now.
CREATE OR REPLACE FUNCTION node_routine_allocate(p_service integer, p_account bigint, p_generation bigint,
                                                 p_client_state text, p_keys_changed_at bigint, p_release_rate numeric,
                                                 p_created_at timestamptz DEFAULT NULL)
    RETURNS node_assignments
    LANGUAGE plpgsql SECURITY DEFINER SET search_path = public, pg_temp
AS $$
DECLARE
    made node_assignments;
BEGIN
    SELECT * INTO made FROM node_allocate(p_service, p_account, p_generation, p_client_state, p_keys_changed_at, NULL,
                                          least(greatest(p_release_rate, 0), 1),
                                          least(coalesce(p_created_at, clock_timestamp()), clock_timestamp()));
    RETURN made;
END;
$$;

CREATE FUNCTION trg_before_node_id_change() RETURNS trigger
    LANGUAGE plpgsql SET search_path = public, pg_temp
AS $$
BEGIN
    RAISE EXCEPTION 'nodes: node % keeps its id (the trail names it by id); add a node instead', OLD.node
        USING ERRCODE = 'LN004';
END;
$$;

CREATE TRIGGER before_node_id_change
    BEFORE UPDATE OF id ON nodes
    FOR EACH ROW
    WHEN (OLD.id IS DISTINCT FROM NEW.id)
    EXECUTE FUNCTION trg_before_node_id_change();
