-- No clock bound on the numbers; the load as 0014_nodes.sql counted it: every row on the node.

DROP TRIGGER IF EXISTS before_node_assignment_clock ON node_assignments;
DROP FUNCTION IF EXISTS trg_before_node_assignment_clock();
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
