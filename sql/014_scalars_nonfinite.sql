-- trainwatch store, version 14: where a series stopped being a number.
--
-- "The first non-finite point of this series" (the web view's mark, the non-finite rules) was
-- a scan of the whole series when it has none: two seconds of a 2-million-point run's page. A
-- partial index holds only the NaN and infinite points, so the answer is one lookup, and
-- ingest pays only for the points it holds (none in a healthy run). A query uses it when its
-- WHERE says `value_class <> 0`.
CREATE INDEX scalars_nonfinite ON scalars(series_id, step) WHERE value_class <> 0;
