-- trainwatch store, version 11: a W&B source's resume state beside its offset. The latest
-- history row's _step and wall time when the offset was committed: a row without _step that is
-- read after a restart of trainwatch follows that row, as it would in one read of the file.
-- (Neither the highest step, which a resume takes back, nor the highest since a restart, which
-- rows re-logged under older wall times go back from without one, is that row.) NULL: not a
-- W&B history source, or a row from before version 11.
ALTER TABLE sources ADD COLUMN wandb_step INTEGER;
ALTER TABLE sources ADD COLUMN wandb_wall REAL;
