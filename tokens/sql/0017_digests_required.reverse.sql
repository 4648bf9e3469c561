DROP INDEX tokens_secret_digest_key;
ALTER TABLE tokens ALTER COLUMN secret_digest DROP NOT NULL;
