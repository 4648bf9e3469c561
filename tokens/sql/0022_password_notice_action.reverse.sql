-- PostgreSQL cannot take a value out of an enum: 'password_changed' stays, unused (0023's reverse
-- deletes the tokens that hold it), and 0001's reverse drops the whole type.
SELECT 1;
