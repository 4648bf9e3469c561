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

CREATE OR REPLACE FUNCTION trg_before_node_assignment_insert() RETURNS trigger
    LANGUAGE plpgsql SET search_path = public, pg_temp
AS $$
DECLARE
    newest node_assignments;
    highest record;
BEGIN
    -- KEY SHARE: a concurrent delete of the account waits for this row, then retires it.
    PERFORM 1 FROM accounts WHERE id = NEW.account FOR KEY SHARE;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'nodes: account % does not exist', NEW.account USING ERRCODE = 'LN003';
    END IF;
    SELECT * INTO newest FROM node_assignments
    WHERE service = NEW.service AND account = NEW.account
    ORDER BY generation DESC, created_at DESC, uid DESC LIMIT 1;
    IF NOT FOUND THEN
        RETURN NEW;
    END IF;
    SELECT max(generation) AS generation, max(keys_changed_at) AS keys_changed_at INTO highest
    FROM node_assignments WHERE service = NEW.service AND account = NEW.account;
    IF NEW.generation < highest.generation THEN
        RAISE EXCEPTION 'nodes: generation % is below the account''s %', NEW.generation, highest.generation
            USING ERRCODE = 'LN004', HINT = 'invalid-generation';
    END IF;
    IF coalesce(NEW.keys_changed_at, 0) < coalesce(highest.keys_changed_at, 0) THEN
        RAISE EXCEPTION 'nodes: keys_changed_at % is below the account''s %', NEW.keys_changed_at, highest.keys_changed_at
            USING ERRCODE = 'LN004', HINT = 'invalid-keysChangedAt';
    END IF;
    IF NEW.client_state <> newest.client_state AND EXISTS (
        SELECT FROM node_assignments
        WHERE service = NEW.service AND account = NEW.account AND client_state = NEW.client_state) THEN
        RAISE EXCEPTION 'nodes: client_state % was used before by this account', quote_literal(NEW.client_state)
            USING ERRCODE = 'LN004', HINT = 'invalid-client-state';
    END IF;
    RETURN NEW;
END;
$$;
