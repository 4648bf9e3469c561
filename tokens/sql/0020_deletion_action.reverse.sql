-- PostgreSQL cannot take a value out of an enum: 'deletion' stays, unused (0021's reverse deletes the
-- tokens that hold it), and 0001's reverse drops the whole type.
SELECT 1;
