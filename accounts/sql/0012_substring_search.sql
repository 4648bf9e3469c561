-- The back-office finds accounts by a middle part of an e-mail or login too (issue 11): a domain
-- (example.com, @example), or "ane" in jane. 0004's text_pattern_ops indexes serve only = and a
-- prefix; a LIKE '%term%' on 1,000,000 accounts was a sequential scan (the stock admin's 456 ms).
-- Trigram GIN indexes serve it. pg_trgm ships with PostgreSQL (contrib) and is a trusted extension
-- since PostgreSQL 13: the database's owner, who runs the migrations, may create it; the runtime
-- role's queries use only the core LIKE operator, which these indexes serve without any grant.
-- A trigram index needs 3 letters or digits in a row to narrow anything: shorter terms are searched
-- by prefix only (accounts/selectors.py).
CREATE EXTENSION IF NOT EXISTS pg_trgm;

-- An address is indexed as its two parts, split at its one @ (0001's and 0007's rules), not whole:
-- a trigram index of whole addresses read every common domain's trigrams for an exact address
-- (jane@example.com: 4,000 pages, 47 ms at 1,000,000 accounts, bench/admin.py), where the local
-- part's are rare. The search asks for "local part ends with jane, domain starts with example.com".
CREATE INDEX accounts_email_local_trgm_idx ON accounts USING gin (split_part(lower(email), '@', 1) gin_trgm_ops);
CREATE INDEX accounts_email_domain_trgm_idx ON accounts USING gin (split_part(lower(email), '@', 2) gin_trgm_ops);
CREATE INDEX accounts_login_trgm_idx ON accounts USING gin (lower(login) gin_trgm_ops);
