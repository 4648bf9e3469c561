-- Two bounds on what one client's reports can do to a node and to its own account.
--
-- 1. A node's load is the number of its live assignments (the accounts it serves), not of its rows.
--
-- Counting rows would let one account fill a node: each key change leaves a replaced row on the node
-- until purge_old_records deletes it a grace period later, so one client changing its keys 17 times
-- would put a node of capacity 5 at 18, and every new account of the service would be refused for
-- the week of the grace period. The replaced rows' data is still on the node until the purge, but the allocator's
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

-- 2. No number from the future. generation and keys_changed_at are milliseconds (FxA's clock) that
-- never go back, so one far ahead of the clock (2^63-2) would refuse the account's real client for
-- good, and nothing could lower it. The client API refuses a number past NODE_CLOCK_MARGIN_SECONDS
-- (accounts/nodes/sync.py); the database refuses one more than a day ahead (that setting's largest
-- value) whoever writes. Not a new claim, so not refused: the tombstone generation (2^63-1, a
-- retired account) and a number the account's rows for the service already reached. And such a
-- number, never a real one, may be lowered to the present or below: "never backwards" protects the
-- history of real credentials, not a number from the future (reset_node_assignment lowers them).

-- The largest generation or keys_changed_at the database takes now: a day ahead of its clock.
CREATE FUNCTION node_clock_limit() RETURNS bigint
    LANGUAGE sql VOLATILE SET search_path = public, pg_temp
AS $$ SELECT (extract(epoch FROM clock_timestamp()) * 1000)::bigint + 86400000 $$;

CREATE FUNCTION trg_before_node_assignment_clock() RETURNS trigger
    LANGUAGE plpgsql SET search_path = public, pg_temp
AS $$
DECLARE
    latest bigint := node_clock_limit();
    reached record;
BEGIN
    IF (NEW.generation <= latest OR NEW.generation = 9223372036854775807)
       AND coalesce(NEW.keys_changed_at, 0) <= latest THEN
        RETURN NEW;
    END IF;
    SELECT max(generation) AS generation, max(keys_changed_at) AS keys_changed_at INTO reached
    FROM node_assignments WHERE service = NEW.service AND account = NEW.account;
    IF NEW.generation > latest AND NEW.generation <> 9223372036854775807
       AND NEW.generation > coalesce(reached.generation, -1) THEN
        RAISE EXCEPTION 'nodes: generation % is more than a day ahead of the clock', NEW.generation
            USING ERRCODE = 'LN004', HINT = 'invalid-generation';
    END IF;
    IF NEW.keys_changed_at > latest AND NEW.keys_changed_at > coalesce(reached.keys_changed_at, -1) THEN
        RAISE EXCEPTION 'nodes: keys_changed_at % is more than a day ahead of the clock', NEW.keys_changed_at
            USING ERRCODE = 'LN004', HINT = 'invalid-keysChangedAt';
    END IF;
    RETURN NEW;
END;
$$;

CREATE TRIGGER before_node_assignment_clock
    BEFORE INSERT OR UPDATE OF generation, keys_changed_at ON node_assignments
    FOR EACH ROW
    EXECUTE FUNCTION trg_before_node_assignment_clock();

-- 0014_nodes.sql's rule for an update, the numbers' "never backwards" sparing a number from the
-- future lowered to the clock's limit or below.
CREATE OR REPLACE FUNCTION trg_before_node_assignment_update() RETURNS trigger
    LANGUAGE plpgsql SET search_path = public, pg_temp
AS $$
DECLARE
    latest bigint := node_clock_limit();
BEGIN
    IF NEW.service <> OLD.service OR NEW.account <> OLD.account OR NEW.client_state <> OLD.client_state
       OR NEW.created_at <> OLD.created_at OR NEW.uid <> OLD.uid THEN
        RAISE EXCEPTION 'nodes: an assignment''s service, account, client_state and creation time cannot change (a new client_state is a new assignment)'
            USING ERRCODE = 'LN004', HINT = 'invalid-client-state';
    END IF;
    IF NEW.node IS DISTINCT FROM OLD.node AND NEW.node IS NOT NULL THEN
        RAISE EXCEPTION 'nodes: an assignment does not move between nodes; replace it instead' USING ERRCODE = 'LN004';
    END IF;
    IF NEW.generation < OLD.generation
       AND NOT (OLD.generation > latest AND OLD.generation <> 9223372036854775807 AND NEW.generation <= latest) THEN
        RAISE EXCEPTION 'nodes: generation never goes backwards (% to %)', OLD.generation, NEW.generation
            USING ERRCODE = 'LN004', HINT = 'invalid-generation';
    END IF;
    IF coalesce(NEW.keys_changed_at, -1) < coalesce(OLD.keys_changed_at, -1)
       AND NOT (OLD.keys_changed_at > latest AND NEW.keys_changed_at <= latest) THEN
        RAISE EXCEPTION 'nodes: keys_changed_at never goes backwards (% to %)', OLD.keys_changed_at, NEW.keys_changed_at
            USING ERRCODE = 'LN004', HINT = 'invalid-keysChangedAt';
    END IF;
    IF OLD.replaced_at IS NOT NULL AND NEW.replaced_at IS NULL THEN
        RAISE EXCEPTION 'nodes: a replaced assignment stays replaced' USING ERRCODE = 'LN004';
    END IF;
    RETURN NEW;
END;
$$;

-- The nodes' load counted anew (an audited change, node.changed, where it moves).
UPDATE nodes n
SET current_load = (SELECT count(*) FROM node_assignments a WHERE a.node = n.id AND a.replaced_at IS NULL)
WHERE current_load <> (SELECT count(*) FROM node_assignments a WHERE a.node = n.id AND a.replaced_at IS NULL);
