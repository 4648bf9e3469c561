DROP FUNCTION event_stream_move_topics(text);
DROP FUNCTION event_stream_start(text);
ALTER TABLE event_stream DROP COLUMN topic_prefix;
