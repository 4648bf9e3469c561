-- PostgreSQL cannot take a value out of an enum: the two stay, unused (0026's reverse deletes the
-- tokens that hold them), and 0001's reverse drops the whole type.
SELECT 1;
