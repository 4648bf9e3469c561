-- 0018_node_bounds.sql's rule for an update back; a tombstone lifted meanwhile stays lowered (its
-- rows keep their real numbers, as any other row's).
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

DROP TRIGGER before_node_assignment_insert_unretired ON node_assignments;
DROP FUNCTION trg_before_node_assignment_insert_unretired();
DROP FUNCTION node_retirement_lifted(node_assignments);
