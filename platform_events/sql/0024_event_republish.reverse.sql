DROP FUNCTION event_publications_republish(timestamptz, timestamptz);
