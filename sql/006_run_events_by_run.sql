-- trainwatch store, version 6: run events by run and kind (diagnosis asks "did this run log a
-- clean end?" for every run; the primary key is by source and offset).
CREATE INDEX run_events_by_run ON run_events(run_id, kind);
