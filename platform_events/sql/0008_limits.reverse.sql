DROP FUNCTION rate_limits_hit(text[], integer[]);
DROP TABLE rate_limits;
