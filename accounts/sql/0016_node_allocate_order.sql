-- node_allocate without deadlocks between concurrent allocations.
--
-- The allocator used to wait for its best candidate node (SELECT ... LIMIT 1 FOR UPDATE) and, finding
-- none, release slots with one UPDATE that locked the nodes to release in the order of the table's
-- heap. A locking SELECT keeps the rows it locked but then found no longer matching (a node another
-- allocation filled meanwhile), and an UPDATE holds the rows it has passed: two allocations could
-- each hold a node the other was waiting for, and PostgreSQL aborted one (40P01) under load, when
-- slots are released often.
--
-- Now an allocation waits for node rows in one place and one order only:
-- 1. First the account's live assignment, when another transaction is changing it (replacing it
--    before a fresh allocation): the call waits for that transaction before it holds any node, so
--    that a second allocation of the same account never holds a node while it waits at the
--    live-row index for a transaction that itself waits for that node.
-- 2. Then, as before, the best candidate that no other transaction holds (SKIP LOCKED: no wait). If
--    there is none, the rows this step locked and then found filled meanwhile are let go (the step
--    runs in a subtransaction, rolled back), so that the call holds no node of the service.
-- 3. When every candidate is held by others, or none has a released slot left: every node of the
--    service that is up, locked in id order, then the best candidate among them, or slots released
--    on them and the best candidate again. Holding them all, the call waits for nothing more.
--
-- Why no cycle: a call waits for nodes only in step 3, holding none of the service's nodes when it
-- starts it (every allocation in a transaction of its own, as the app makes them), and there it
-- takes them in increasing id; a transaction holding node k and waiting is waiting for a node above
-- k, so waits follow increasing ids and never close a circle. A call that got its node in step 2
-- waits for no node afterwards. The slot taken at insert (trg_after_node_assignment_insert_load) is
-- on the node the call already holds. A transaction that already holds nodes of the service when it
-- calls (it allocated before, or its insert or purge of an assignment changed a node's load) takes
-- them out of order and may still deadlock when it has to wait.

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
