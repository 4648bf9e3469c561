-- A token used while a mail run still held it (its claim set) had been mailed: only its e-mail carries
-- the link and the code. Its run was killed, or lost the database, between the SMTP server's
-- acceptance and the sent-mark, and the person used the e-mail before the lease let another run send
-- it again (the soak test saw it, issue 9). It was recorded as "skipped: used before it was mailed";
-- it is now recorded as sent, saying that its mark was lost. Used or replaced before any run held it:
-- skipped, as before.
CREATE OR REPLACE FUNCTION trg_before_token_mail_unneeded() RETURNS trigger
    LANGUAGE plpgsql
    SET search_path = public, pg_temp
AS $$
BEGIN
    IF NEW.consumed_at IS NOT NULL AND OLD.mail_claim IS NOT NULL THEN
        NEW.mail_state := 'sent';
        NEW.mail_error := 'used while its mail run held it: its e-mail went out, its sent-mark was lost';
        RETURN NEW;
    END IF;
    NEW.mail_state := 'skipped';
    NEW.mail_error := CASE WHEN NEW.consumed_at IS NOT NULL THEN 'used before it was mailed'
                           ELSE 'replaced by a newer token before it was mailed' END;
    RETURN NEW;
END;
$$;
