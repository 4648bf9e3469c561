-- No clock bound on the numbers; the load as 0014_nodes.sql counted it: every row on the node.

DROP TRIGGER IF EXISTS before_node_assignment_clock ON node_assignments;
DROP FUNCTION IF EXISTS trg_before_node_assignment_clock();

CREATE OR REPLACE FUNCTION trg_before_node_assignment_update() RETURNS trigger
    LANGUAGE plpgsql SET search_path = public, pg_temp
AS $$
BEGIN
    IF NEW.service <> OLD.service OR NEW.account <> OLD.account OR NEW.client_state <> OLD.client_state
       OR NEW.created_at <> OLD.created_at OR NEW.uid <> OLD.uid THEN
        RAISE EXCEPTION 'nodes: an assignment''s service, account, client_state and creation time cannot change (a new client_state is a new assignment)'
            USING ERRCODE = 'LN004', HINT = 'invalid-client-state';
    END IF;
    IF NEW.node IS DISTINCT FROM OLD.node AND NEW.node IS NOT NULL THEN
        RAISE EXCEPTION 'nodes: an assignment does not move between nodes; replace it instead' USING ERRCODE = 'LN004';
    END IF;
    IF NEW.generation < OLD.generation THEN
        RAISE EXCEPTION 'nodes: generation never goes backwards (% to %)', OLD.generation, NEW.generation
            USING ERRCODE = 'LN004', HINT = 'invalid-generation';
    END IF;
    IF coalesce(NEW.keys_changed_at, -1) < coalesce(OLD.keys_changed_at, -1) THEN
        RAISE EXCEPTION 'nodes: keys_changed_at never goes backwards (% to %)', OLD.keys_changed_at, NEW.keys_changed_at
            USING ERRCODE = 'LN004', HINT = 'invalid-keysChangedAt';
    END IF;
    IF OLD.replaced_at IS NOT NULL AND NEW.replaced_at IS NULL THEN
        RAISE EXCEPTION 'nodes: a replaced assignment stays replaced' USING ERRCODE = 'LN004';
    END IF;
    RETURN NEW;
END;
$$;

DROP FUNCTION IF EXISTS node_clock_limit();
DROP TRIGGER IF EXISTS after_node_assignment_replace_load ON node_assignments;
DROP FUNCTION IF EXISTS trg_after_node_assignment_replace_load();

CREATE OR REPLACE FUNCTION trg_after_node_assignment_insert_load() RETURNS trigger
    LANGUAGE plpgsql SET search_path = public, pg_temp
AS $$
BEGIN
    UPDATE nodes n
    SET current_load = n.current_load + p.taken,
        available = greatest(n.available - p.taken, 0)
    FROM (SELECT node, count(*)::int AS taken FROM new_rows WHERE node IS NOT NULL GROUP BY node) p
    WHERE n.id = p.node;
    RETURN NULL;
END;
$$;

CREATE OR REPLACE FUNCTION trg_after_node_assignment_delete_load() RETURNS trigger
    LANGUAGE plpgsql SET search_path = public, pg_temp
AS $$
BEGIN
    UPDATE nodes n
    SET current_load = greatest(n.current_load - p.freed, 0),
        available = least(n.available + p.freed, n.capacity)
    FROM (SELECT node, count(*)::int AS freed FROM old_rows WHERE node IS NOT NULL GROUP BY node) p
    WHERE n.id = p.node;
    RETURN NULL;
END;
$$;

UPDATE nodes n
SET current_load = (SELECT count(*) FROM node_assignments a WHERE a.node = n.id)
WHERE current_load <> (SELECT count(*) FROM node_assignments a WHERE a.node = n.id);
