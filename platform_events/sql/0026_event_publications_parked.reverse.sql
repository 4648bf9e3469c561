DROP INDEX event_publications_parked;
DROP INDEX event_publications_due;
CREATE INDEX event_publications_due ON event_publications (event_seq) WHERE status = 'PENDING';
ALTER TABLE event_publications DROP COLUMN parked;
