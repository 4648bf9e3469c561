CREATE OR REPLACE FUNCTION trg_before_token_mail_unneeded() RETURNS trigger
    LANGUAGE plpgsql
    SET search_path = public, pg_temp
AS $$
BEGIN
    NEW.mail_state := 'skipped';
    NEW.mail_error := CASE WHEN NEW.consumed_at IS NOT NULL THEN 'used before it was mailed'
                           ELSE 'replaced by a newer token before it was mailed' END;
    RETURN NEW;
END;
$$;
