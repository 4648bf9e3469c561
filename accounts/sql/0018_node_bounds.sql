-- A node's load is the number of its live assignments (the accounts it serves), not of its rows.
--
-- Counting rows let one account fill a node: each key change leaves a replaced row on the node until
-- purge_old_records deletes it a grace period later, so one client changing its keys 17 times put a
-- node of capacity 5 at 18, and every new account of the service was refused for the week of the
-- grace period. The replaced rows' data is still on the node until the purge, but the allocator's
-- question is how many accounts a node serves: so a row takes a slot while it is live and gives it
-- back when it is replaced or deleted live; purging a replaced row changes no load. A key change
-- (the live row replaced, a new one on the same node) leaves the load and the released slots as
-- they were.

CREATE OR REPLACE FUNCTION trg_after_node_assignment_insert_load() RETURNS trigger
    LANGUAGE plpgsql SET search_path = public, pg_temp
AS $$
BEGIN
    UPDATE nodes n
    SET current_load = n.current_load + p.taken,
        available = greatest(n.available - p.taken, 0)
    FROM (SELECT node, count(*)::int AS taken FROM new_rows
          WHERE node IS NOT NULL AND replaced_at IS NULL GROUP BY node) p
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
    FROM (SELECT node, count(*)::int AS freed FROM old_rows
          WHERE node IS NOT NULL AND replaced_at IS NULL GROUP BY node) p
    WHERE n.id = p.node;
    RETURN NULL;
END;
$$;

-- A live row replaced gives its slot back. (A row's node changes only to none, when the node itself
-- is deleted, and a replaced row stays replaced: no other update moves the load.)
CREATE FUNCTION trg_after_node_assignment_replace_load() RETURNS trigger
    LANGUAGE plpgsql SET search_path = public, pg_temp
AS $$
BEGIN
    UPDATE nodes n
    SET current_load = greatest(n.current_load - p.freed, 0),
        available = least(n.available + p.freed, n.capacity)
    FROM (SELECT o.node, count(*)::int AS freed FROM old_rows o JOIN new_rows r USING (uid)
          WHERE o.node IS NOT NULL AND r.node IS NOT NULL AND o.replaced_at IS NULL AND r.replaced_at IS NOT NULL
          GROUP BY o.node) p
    WHERE n.id = p.node;
    RETURN NULL;
END;
$$;

CREATE TRIGGER after_node_assignment_replace_load
    AFTER UPDATE ON node_assignments
    REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
    FOR EACH STATEMENT
    EXECUTE FUNCTION trg_after_node_assignment_replace_load();

-- The nodes' load counted anew (an audited change, node.changed, where it moves).
UPDATE nodes n
SET current_load = (SELECT count(*) FROM node_assignments a WHERE a.node = n.id AND a.replaced_at IS NULL)
WHERE current_load <> (SELECT count(*) FROM node_assignments a WHERE a.node = n.id AND a.replaced_at IS NULL);
