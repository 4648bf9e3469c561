DROP INDEX tokens_dead_mail_idx;
