-- Back to the rules of 0001_accounts.sql.

CREATE OR REPLACE FUNCTION accounts_email_problem(email text) RETURNS text
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
AS $$
    SELECT CASE
        WHEN email IS NULL OR email = '' THEN 'e-mail must not be empty'
        WHEN email ~ '^\s|\s$' THEN 'e-mail must not start or end with spaces'
        WHEN length(email) > 254 THEN 'e-mail must be at most 254 characters'
        WHEN email ~ '[^\x21-\x7e]' THEN 'e-mail must be plain ASCII (internationalised addresses are not supported)'
        WHEN position('@' IN email) > 65
             OR email !~ '^[A-Za-z0-9.!#$%&''*+/=?^_`{|}~-]+@[A-Za-z0-9]([A-Za-z0-9-]*[A-Za-z0-9])?(\.[A-Za-z0-9]([A-Za-z0-9-]*[A-Za-z0-9])?)+$'
            THEN 'e-mail is not a valid address (name@example.com)'
    END
$$;

CREATE OR REPLACE FUNCTION accounts_login_problem(login text) RETURNS text
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
AS $$
    SELECT CASE
        WHEN login IS NULL OR login = '' THEN 'login must not be empty'
        WHEN login ~ '^\s|\s$' THEN 'login must not start or end with spaces'
        WHEN length(login) > 254 THEN 'login must be at most 254 characters'
        WHEN login !~ '^[A-Za-z0-9]([A-Za-z0-9._@+-]*[A-Za-z0-9])?$'
            THEN 'login may only hold ASCII letters, digits and . _ @ + -, and must start and end with a letter or digit'
    END
$$;

DROP TRIGGER before_account_validate ON accounts;
CREATE TRIGGER before_account_validate
    BEFORE INSERT OR UPDATE OF email, login ON accounts
    FOR EACH ROW
    WHEN (NOT (
        NEW.email ~ '^[A-Za-z0-9.!#$%&''*+/=?^_`{|}~-]+@[A-Za-z0-9]([A-Za-z0-9-]*[A-Za-z0-9])?(\.[A-Za-z0-9]([A-Za-z0-9-]*[A-Za-z0-9])?)+$'
        AND length(NEW.email) <= 254 AND position('@' IN NEW.email) <= 65
        AND NEW.login ~ '^[A-Za-z0-9]([A-Za-z0-9._@+-]*[A-Za-z0-9])?$' AND length(NEW.login) <= 254
    ) IS NOT FALSE)
    EXECUTE FUNCTION trg_before_account_validate();
