DROP INDEX tokens_open_expires_idx;
DROP INDEX tokens_retrying_mail_idx;
