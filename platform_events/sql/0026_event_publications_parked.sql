-- Parking (docs/kafka.md, "Claim, lease, publish, mark"): an event held back by an earlier unpublished
-- one of its account leaves the due index until that one is published, so that the claim walks what it
-- can publish, not every event an account has waiting behind one the broker refused or one in flight.
--
-- * The claim parks each event it walks past as held back (in the statement that claims the others).
-- * The mark unparks the first parked event of each account it published.
-- * The relay's sweep unparks a first parked event with no earlier unpublished one: after a claim that
--   parked while the event holding it back was being marked (a race between two relays), or a park the
--   runtime role made by hand.
-- Parking is an index's business only: the claim still checks the hold-back itself, so an event
-- unparked too early is parked again, never published out of order. The trigger's WHEN (0022) lets
-- the runtime role change `parked` with any routine move. The flag means nothing once an event is
-- published (every index that reads it is on PENDING rows), and no constraint ties it to PENDING: a
-- relay of the release before this one, still running after the migration, neither parks nor
-- unparks, and its mark of a row parked meanwhile must not fail.
ALTER TABLE event_publications ADD COLUMN parked boolean NOT NULL DEFAULT false;

DROP INDEX event_publications_due;
CREATE INDEX event_publications_due ON event_publications (event_seq) WHERE status = 'PENDING' AND NOT parked;
-- Each account's first parked event, for the mark and the sweep.
CREATE INDEX event_publications_parked ON event_publications (ordering_key, event_seq)
    WHERE status = 'PENDING' AND parked;
