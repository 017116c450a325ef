-- The stable query contract. Column lists only ever grow.

CREATE VIEW scalar_points_all AS
SELECT r.name AS run, s.tag AS tag, p.step AS step, p.wall_time AS wall_time,
       CASE p.value_class WHEN 1 THEN NULL ELSE p.value END AS value,
       CASE p.value_class WHEN 0 THEN 'finite' WHEN 1 THEN 'nan' WHEN 2 THEN '+inf' ELSE '-inf' END
         AS value_class,
       p.superseded AS superseded, r.root AS root, r.run_id AS run_id, s.series_id AS series_id,
       p.source_id AS source_id
FROM scalars p JOIN series s USING (series_id) JOIN runs r USING (run_id);

CREATE VIEW scalar_points AS
SELECT run, tag, step, wall_time, value, value_class, root, run_id, series_id, source_id
FROM scalar_points_all WHERE superseded = 0;

CREATE VIEW histogram_points AS
SELECT r.name AS run, s.tag AS tag, h.step, h.wall_time, h.count, h.sum, h.min, h.max, h.buckets,
       r.run_id, s.series_id
FROM histograms h JOIN series s USING (series_id) JOIN runs r USING (run_id)
WHERE h.superseded = 0;

CREATE VIEW text_points AS
SELECT r.name AS run, s.tag AS tag, t.step, t.wall_time, t.text, r.run_id, s.series_id
FROM texts t JOIN series s USING (series_id) JOIN runs r USING (run_id)
WHERE t.superseded = 0;

CREATE VIEW run_hparams AS
SELECT r.name AS run, h.key, h.value_type,
       CASE h.value_type WHEN 'string' THEN h.value_text ELSE h.value_num END AS value, r.run_id
FROM hparams h JOIN runs r USING (run_id);

CREATE VIEW run_summary AS
SELECT r.run_id, r.root, r.name AS run,
       (SELECT count(*) FROM series s WHERE s.run_id = r.run_id) AS series,
       (SELECT count(*) FROM scalars p JOIN series s USING (series_id)
         WHERE s.run_id = r.run_id AND p.superseded = 0) AS scalar_points,
       (SELECT max(p.step) FROM scalars p JOIN series s USING (series_id)
         WHERE s.run_id = r.run_id AND p.superseded = 0) AS last_step,
       (SELECT max(p.wall_time) FROM scalars p JOIN series s USING (series_id)
         WHERE s.run_id = r.run_id) AS last_wall_time
FROM runs r;
