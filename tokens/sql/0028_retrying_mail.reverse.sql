DROP INDEX tokens_retrying_mail_idx;
