-- 0017_node_trail.sql's definitions back.
DROP TRIGGER before_node_id_change ON nodes;
DROP FUNCTION trg_before_node_id_change();
DROP TRIGGER before_node_assignment_node_unset ON node_assignments;
DROP FUNCTION trg_before_node_assignment_node_unset();

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

CREATE OR REPLACE FUNCTION node_routine_replace_row(p_uid bigint, p_at timestamptz DEFAULT NULL, p_live_only boolean DEFAULT false)
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
                                          least(greatest(p_release_rate, 0), 1), p_created_at);
    RETURN made;
END;
$$;

CREATE OR REPLACE FUNCTION node_routine_replace(p_service integer, p_account bigint, p_at timestamptz DEFAULT NULL)
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
