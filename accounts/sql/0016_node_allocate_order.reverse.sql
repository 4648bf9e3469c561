-- node_allocate as 0014_nodes.sql made it.

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
    released int;
BEGIN
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
        FOR attempt IN 1..5 LOOP
            SELECT * INTO chosen FROM nodes
            WHERE service = p_service AND available > 0 AND current_load < capacity AND NOT downed AND NOT backoff
            ORDER BY ln(nullif(current_load, 0)) / nullif(ln(capacity), 0) NULLS FIRST, capacity DESC, id
            LIMIT 1 FOR UPDATE SKIP LOCKED;
            IF NOT FOUND THEN
                SELECT * INTO chosen FROM nodes
                WHERE service = p_service AND available > 0 AND current_load < capacity AND NOT downed AND NOT backoff
                ORDER BY ln(nullif(current_load, 0)) / nullif(ln(capacity), 0) NULLS FIRST, capacity DESC, id
                LIMIT 1 FOR UPDATE;
            END IF;
            EXIT WHEN FOUND;
            -- Releasing slots is the allocator's bookkeeping, not an operator's change: not audited.
            routine := current_setting('lifecycle.node_routine', true);
            PERFORM set_config('lifecycle.node_routine', 'on', true);
            UPDATE nodes
            SET available = least(ceil(capacity * p_release_rate)::int, capacity - current_load)
            WHERE service = p_service AND available <= 0 AND capacity > current_load AND NOT downed;
            GET DIAGNOSTICS released = ROW_COUNT;
            PERFORM set_config('lifecycle.node_routine', coalesce(routine, ''), true);
            EXIT WHEN released = 0;
        END LOOP;
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
