-- Addresses the mailer can send to, and logins that cannot pass for one (issue 8).
--
-- The first rule let through addresses Django's mailer cannot send to, and one bad address stopped
-- the whole mail run: a domain label over 63 characters (the idna codec refuses it), RFC 2047
-- encoded words in the local part ('=?utf-8?q?a=0D=0Ab?=@...' decodes to CR/LF, and
-- '=?us-ascii?q?active1?=@...' is mailed to active1@..., a second spelling of another address), and
-- local parts that are not an RFC 5321 dot-atom ('.a..b.@...'). Logins held '@', so a login could
-- look like another account's address and a login-or-e-mail form resolved to the wrong account.
-- Rows stored before this rule keep their values; only inserts and changes are held to it.

CREATE OR REPLACE FUNCTION accounts_email_problem(email text) RETURNS text
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
AS $$
    SELECT CASE
        WHEN email IS NULL OR email = '' THEN 'e-mail must not be empty'
        WHEN email ~ '^\s|\s$' THEN 'e-mail must not start or end with spaces'
        WHEN length(email) > 254 THEN 'e-mail must be at most 254 characters'
        WHEN email ~ '[^\x21-\x7e]' THEN 'e-mail must be plain ASCII (internationalised addresses are not supported)'
        WHEN position('=?' IN email) > 0
            THEN 'e-mail must not contain "=?" (mailers read it as an encoded word and send elsewhere)'
        WHEN email ~ '[.@][A-Za-z0-9-]{64}'
            THEN 'e-mail domain parts must be at most 63 characters each'
        WHEN position('@' IN email) > 65
             OR email !~ '^[A-Za-z0-9!#$%&''*+/=?^_`{|}~-]+(\.[A-Za-z0-9!#$%&''*+/=?^_`{|}~-]+)*@[A-Za-z0-9]([A-Za-z0-9-]*[A-Za-z0-9])?(\.[A-Za-z0-9]([A-Za-z0-9-]*[A-Za-z0-9])?)+$'
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
        WHEN position('@' IN login) > 0 THEN 'login must not contain @ (an e-mail address is not a login)'
        WHEN login !~ '^[A-Za-z0-9]([A-Za-z0-9._+-]*[A-Za-z0-9])?$'
            THEN 'login may only hold ASCII letters, digits and . _ + -, and must start and end with a letter or digit'
    END
$$;

-- The WHEN clause accepts a good e-mail and login in the executor, as before; it repeats the
-- functions' final tests (tests/accounts/test_triggers.py holds the two to the same rule).
DROP TRIGGER before_account_validate ON accounts;
CREATE TRIGGER before_account_validate
    BEFORE INSERT OR UPDATE OF email, login ON accounts
    FOR EACH ROW
    WHEN (NOT (
        NEW.email ~ '^[A-Za-z0-9!#$%&''*+/=?^_`{|}~-]+(\.[A-Za-z0-9!#$%&''*+/=?^_`{|}~-]+)*@[A-Za-z0-9]([A-Za-z0-9-]*[A-Za-z0-9])?(\.[A-Za-z0-9]([A-Za-z0-9-]*[A-Za-z0-9])?)+$'
        AND length(NEW.email) <= 254 AND position('@' IN NEW.email) <= 65
        AND position('=?' IN NEW.email) = 0 AND NEW.email !~ '[.@][A-Za-z0-9-]{64}'
        AND NEW.login ~ '^[A-Za-z0-9]([A-Za-z0-9._+-]*[A-Za-z0-9])?$' AND length(NEW.login) <= 254
    ) IS NOT FALSE)
    EXECUTE FUNCTION trg_before_account_validate();
