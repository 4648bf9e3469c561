DROP TRIGGER after_password_set_again_notice ON account_passwords;
DROP TRIGGER after_password_change_notice ON account_passwords;
DROP FUNCTION trg_after_password_change_notice();
DROP TRIGGER before_token_a_notice_consumed ON tokens;
DROP FUNCTION trg_before_token_consume_notice();
DROP TRIGGER before_token_insert_notice ON tokens;
DROP FUNCTION trg_before_token_insert_notice();
DELETE FROM tokens WHERE action = 'password_changed';
