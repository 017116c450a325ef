-- trainwatch store, version 12: a line source's resume state beside its offset. A console log
-- or a CSV file is read from its committed offset on, but what a line means can depend on
-- lines before it (the last progress bar's step, a CSV's header, how many lines logged a
-- metric so far): the format writes that here, in one short text of its own, committed with
-- the offset, so that a read resumed after a restart means what one read of the whole file
-- would. NULL: the format keeps none.
ALTER TABLE sources ADD COLUMN resume_state TEXT;
