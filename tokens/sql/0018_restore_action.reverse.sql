-- PostgreSQL cannot take a value out of an enum: 'restore' stays, unused (0019's reverse refuses
-- while a token holds it), and 0001's reverse drops the whole type.
SELECT 1;
