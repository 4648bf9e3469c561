DROP INDEX IF EXISTS accounts_activated_at_brin;
DROP INDEX IF EXISTS accounts_created_at_brin;
