-- The Kafka relay's figures on /metrics (docs/production.md, "Metrics"): the events published in the
-- last few minutes are read through this index, so a scrape costs what was published lately, not
-- every publication kept until retention. The runtime role reads event_publications and event_stream
-- already (platform_events/db/runtime_role.py): the other figures need no function of their own (the
-- unpublished ones are read through event_publications_due).
CREATE INDEX event_publications_published_at ON event_publications (published_at) WHERE status = 'PUBLISHED';
