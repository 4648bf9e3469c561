DROP FUNCTION history_rewrite_allowed();
DROP TABLE history_rewrite_key;
