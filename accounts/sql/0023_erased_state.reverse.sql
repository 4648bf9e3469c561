-- PostgreSQL cannot take a value out of an enum: 'erased' stays, unused (0024's reverse refuses while
-- an account holds it), and 0001's reverse drops the whole type.
SELECT 1;
