-- The seed schema: the accounts and tokens tables and triggers the product was designed from (README,
-- "What differs from the seed, and why"), in a schema of their own, for comparison only.
-- One change: the embedded PostgreSQL has no pgcrypto, so gen_random_bytes(32) is replaced by the
-- same core expression our schema uses.
CREATE SCHEMA seed;
SET search_path = seed, public;

CREATE TYPE seed.account_status AS ENUM ('provisioned', 'active', 'suspended');
CREATE TABLE seed.accounts (
    id                  BIGSERIAL PRIMARY KEY,
    email               VARCHAR(254) UNIQUE NOT NULL,
    status              seed.account_status DEFAULT 'provisioned' NOT NULL,
    login               VARCHAR(254) UNIQUE NOT NULL,
    created_at          INTEGER DEFAULT EXTRACT(EPOCH FROM NOW()) NOT NULL,
    status_changed_at   INTEGER,
    activated_at        INTEGER,
    suspended_at        INTEGER,
    unsuspended_at      INTEGER
);
CREATE TYPE seed.token_action AS ENUM ('activation', 'password_recovery');
CREATE TABLE seed.tokens (
    id          BIGSERIAL PRIMARY KEY,
    action      seed.token_action NOT NULL,
    secret      BYTEA DEFAULT sha256(uuid_send(gen_random_uuid()) || uuid_send(gen_random_uuid())) UNIQUE NOT NULL,
    code        VARCHAR(5) DEFAULT LPAD(TO_CHAR(RANDOM() * 100000, 'FM00000'), 5, '0'),
    account     BIGINT NOT NULL,
    expires_at  INTEGER DEFAULT EXTRACT(EPOCH FROM NOW() + INTERVAL '15 minute') NOT NULL,
    consumed_at INTEGER,
    created_at  INTEGER DEFAULT EXTRACT(EPOCH FROM NOW()) NOT NULL,
    FOREIGN KEY (account) REFERENCES seed.accounts (id) ON DELETE CASCADE DEFERRABLE INITIALLY DEFERRED
);
CREATE INDEX accounts_id_status_idx ON seed.accounts (id, status);
CREATE INDEX tokens_id_expires_consumed_action_idx ON seed.tokens (id, expires_at, consumed_at, action);

CREATE FUNCTION seed.trg_before_account_insert() RETURNS TRIGGER SET search_path = seed AS $$
BEGIN
    IF (NEW.status = 'provisioned') THEN
        INSERT INTO tokens (account, action) VALUES (NEW.id, 'activation');
    END IF;
    RETURN NEW;
END;
$$ LANGUAGE plpgsql;
CREATE TRIGGER before_account_insert BEFORE INSERT ON seed.accounts
    FOR EACH ROW EXECUTE FUNCTION seed.trg_before_account_insert();

CREATE FUNCTION seed.trg_after_token_inserted() RETURNS TRIGGER LANGUAGE plpgsql AS $$
BEGIN
    NOTIFY token_insert;
    RETURN NULL;
END;
$$;
CREATE TRIGGER after_token_inserted AFTER INSERT ON seed.tokens
    FOR EACH ROW EXECUTE FUNCTION seed.trg_after_token_inserted();

-- Bare tables of the same shape: the same columns with only the primary key, and with the indexes above.
CREATE TABLE seed.accounts_bare (LIKE seed.accounts INCLUDING DEFAULTS);
ALTER TABLE seed.accounts_bare ADD PRIMARY KEY (id);
CREATE TABLE seed.accounts_indexed (LIKE seed.accounts INCLUDING ALL);

RESET search_path;
