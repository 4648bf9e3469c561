-- Trigger-kept history cannot be rewritten by the runtime role (issue 8, item 10; README, "Security").
--
-- The triggers of accounts and tokens refuse to rewrite what they keep (status timestamps, a token's
-- identity). Demo data, benches and tests still need aged rows: a statement may rewrite that history
-- when its transaction carries, by SET LOCAL lifecycle.rewrite_history, the key kept in the table
-- below. Only the owner can read the key (the runtime role is granted nothing on it), so the runtime
-- role cannot open this door by itself; every rewrite is audited. This is pgtrigger.ignore's
-- transaction-local flag, made a capability: ALTER TABLE ... DISABLE TRIGGER would need ownership
-- and an exclusive lock, and a plain flag could be set by anyone.
CREATE TABLE history_rewrite_key (
    one boolean PRIMARY KEY DEFAULT true CHECK (one),
    key text NOT NULL
);
-- 256 bits from pg_strong_random (core PostgreSQL only: two random UUIDs, hashed).
INSERT INTO history_rewrite_key (key)
SELECT encode(sha256(uuid_send(gen_random_uuid()) || uuid_send(gen_random_uuid())), 'hex');
REVOKE ALL ON history_rewrite_key FROM PUBLIC;

-- Whether the current transaction holds the key. SECURITY DEFINER: it reads the key as the owner and
-- says only yes or no.
CREATE FUNCTION history_rewrite_allowed() RETURNS boolean
    LANGUAGE sql STABLE SECURITY DEFINER SET search_path = public, pg_temp
AS $$
    SELECT EXISTS (
        SELECT FROM history_rewrite_key WHERE key = current_setting('lifecycle.rewrite_history', true)
    )
$$;
