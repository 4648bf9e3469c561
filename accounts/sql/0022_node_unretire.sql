-- Reprovisioning gives an account its storage back, through an operator's reset
-- (docs/nodes.md, "Deprovisioning and reprovisioning"). Deprovisioning retired the account's live
-- assignments: each replaced and given the tombstone generation, its own kept in retired_generation
-- (0021_deprovision.sql). A tombstone never goes backwards, so no client of the account is served
-- again. Once the account is reprovisioned, and only then, a direct write (an operator's reset,
-- audited in full; no node_routine_* function lowers a generation) may give such a row back the
-- generation it had, exactly that one. The rows stay replaced, so their data is still purged;
-- the reset then gives the account a fresh row with its real numbers. A tombstone without a
-- retired_generation (a deleted account's, a client's own retirement), or one of an account still
-- deprovisioned, is never lifted.

-- No row at all for a deprovisioned account, whoever writes; and the account's row locked FOR SHARE,
-- so that a deprovisioning and a row being made wait for each other (0014_nodes.sql's rule otherwise).
CREATE OR REPLACE FUNCTION trg_before_node_assignment_insert() RETURNS trigger
    LANGUAGE plpgsql SET search_path = public, pg_temp
AS $$
DECLARE
    owner_status account_status;
    newest node_assignments;
    highest record;
BEGIN
    -- SHARE: a concurrent delete or deprovisioning of the account waits for this row, then retires it
    -- (KEY SHARE let a status change pass, and the row stayed live); this waits for them in turn.
    SELECT status INTO owner_status FROM accounts WHERE id = NEW.account FOR SHARE;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'nodes: account % does not exist', NEW.account USING ERRCODE = 'LN003';
    END IF;
    IF owner_status = 'deprovisioned' THEN
        RAISE EXCEPTION 'nodes: account % is deprovisioned; it gets no node until it is reprovisioned', NEW.account
            USING ERRCODE = 'LN004', HINT = 'invalid-generation';
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

-- Whether ``old``'s tombstone, given by deprovisioning, may be lifted now: the rule above.
CREATE FUNCTION node_retirement_lifted(old node_assignments) RETURNS boolean
    LANGUAGE sql STABLE SET search_path = public, pg_temp
AS $$
    SELECT old.retired_generation IS NOT NULL
       AND old.replaced_at IS NOT NULL
       -- Only deprovisioning gives a retired_generation: an account no longer deprovisioned has been
       -- reprovisioned since.
       AND EXISTS (SELECT FROM accounts a WHERE a.id = old.account AND a.status <> 'deprovisioned')
$$;

-- A new row never carries a retired_generation: only the retirement gives one.
CREATE FUNCTION trg_before_node_assignment_insert_unretired() RETURNS trigger
    LANGUAGE plpgsql SET search_path = public, pg_temp
AS $$
BEGIN
    RAISE EXCEPTION 'nodes: retired_generation is the generation a row had when deprovisioning retired it, kept by the database'
        USING ERRCODE = 'LN004';
END;
$$;

CREATE TRIGGER before_node_assignment_insert_unretired
    BEFORE INSERT ON node_assignments
    FOR EACH ROW
    WHEN (NEW.retired_generation IS NOT NULL)
    EXECUTE FUNCTION trg_before_node_assignment_insert_unretired();

-- 0018_node_bounds.sql's rule for an update, retired_generation kept and a lifted tombstone spared.
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
    IF NEW.retired_generation IS DISTINCT FROM OLD.retired_generation
       AND NOT (OLD.generation <> 9223372036854775807 AND NEW.generation = 9223372036854775807
                AND NEW.retired_generation = OLD.generation) THEN
        RAISE EXCEPTION 'nodes: retired_generation is the generation a row had when deprovisioning retired it, kept by the database'
            USING ERRCODE = 'LN004';
    END IF;
    IF NEW.generation < OLD.generation
       AND NOT (OLD.generation > latest AND OLD.generation <> 9223372036854775807 AND NEW.generation <= latest)
       AND NOT (OLD.generation = 9223372036854775807 AND NEW.generation = OLD.retired_generation
                AND node_retirement_lifted(OLD)) THEN
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
