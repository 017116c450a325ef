-- id: loss_at_chance
-- title: Loss is stuck at chance level
-- severity: warning
-- roles: train_loss
-- inhibited_by: non_finite_loss, loss_constant
-- cause: The model predicts no better than a uniform guess over K classes (cross-entropy ln K,
--   or (K-1)/K^2 for a mean-squared error on one-hot targets) and has not moved from there:
--   labels detached from their inputs (shuffled separately, a wrong column), every label the
--   same class, a learning rate far too low, or a dead initialisation (all-zero weights, dead
--   ReLUs, a frozen backbone with an untrained head that gets no gradient).
-- fix: Overfit one small batch (32 examples) first: the loss must go near zero, else it is a
--   bug. Check a few (input, label) pairs by eye and the label histogram; check the init (no
--   zero weights; the logits' spread at step 0) and that gradients reach every layer; try an
--   LR 10x higher.
-- param min_points = 8: loss points at chance, at least
-- param min_steps = 1000: and the stretch spans this many steps, or min_epochs epochs, or
--   min_seconds of the run's time (a classifier starts at chance: only a long stay counts)
-- param min_epochs = 2: epochs (from an epoch series) spent at chance, alternatively
-- param min_seconds = 1800: seconds of wall time spent at chance, alternatively
-- param start_tol = 0.03: the first and the latest values (medians of a tenth of the run) are
--   within this (relative) of the chance level, for a K the hparams or an accuracy at chance give
-- param bare_tol = 0.015: the same for a K guessed from common class counts alone
-- param stay_tol = 0.05: and this share of the points lies within stay_tol of it ...
-- param stay_share = 0.9: ... at least
-- param acc_tol = 0.3: an accuracy within this (relative) of 1/K is at chance; one above
--   (1 + acc_tol)/K shows learning and keeps the rule quiet
--
-- K comes from the hyperparameters (num_labels, num_classes, vocab_size, ...), from an
-- accuracy series at chance (1/K, or the majority share), or, with tighter bounds, from
-- common class counts and vocabulary sizes. The loss must sit at ln K (or at the one-hot MSE
-- level (K-1)/K^2 when the tag says mse or the accuracy is at 1/K) from its first values to its
-- latest: a loss that started at chance and later fell (an S-curve, or any classifier after
-- its first steps) is not reported, and a finding resolves once it falls. A stay of a few
-- points is what every classifier shows at its start, hence min_steps / min_epochs /
-- min_seconds.
WITH pts AS (
  SELECT series_id, tag, step, wall_time, value FROM role_points
  WHERE run_id = :run_id AND role = 'train_loss' AND value_class = 0 AND value > 0
), s AS MATERIALIZED (
  -- Each series' span; a "tenth" is a tenth of its steps, and two logging intervals at least
  -- (three points of a 10-point run).
  SELECT series_id, tag, count(*) AS n, min(step) AS lo, max(step) AS hi,
         max(wall_time) - min(wall_time) AS seconds,
         max(0.1 * (max(step) - min(step)), 2.0 * (max(step) - min(step)) / max(1, count(*) - 1)) AS tenth
  FROM pts GROUP BY series_id HAVING count(*) >= :min_points
), ends AS MATERIALIZED (
  -- The first and the latest level: medians of the first and the last tenth.
  SELECT s.series_id, s.tag, s.n, s.lo, s.hi, s.seconds,
         tw_median(CASE WHEN p.step <= s.lo + s.tenth THEN p.value END) AS first_level,
         tw_median(CASE WHEN p.step >= s.hi - s.tenth THEN p.value END) AS last_level
  FROM s JOIN pts p USING (series_id) GROUP BY s.series_id
), spans AS MATERIALIZED (
  SELECT ends.*,
         (SELECT max(value) - min(value) FROM role_points e WHERE e.run_id = :run_id AND e.role = 'epoch'
            AND e.value_class = 0 AND e.step BETWEEN ends.lo AND ends.hi) AS epochs
  FROM ends
), acc AS MATERIALIZED (
  -- The highest recent accuracy of any accuracy series (a percentage read as a fraction).
  SELECT max(a) AS a, (SELECT tag FROM run_roles WHERE run_id = :run_id AND series_id = x.series_id) AS tag
  FROM (SELECT series_id, CASE WHEN m > 1 THEN m / 100 ELSE m END AS a
        FROM (SELECT series_id,
                     (SELECT tw_median(value) FROM (SELECT value FROM role_points q WHERE q.run_id = :run_id
                        AND q.series_id = r.series_id AND q.value_class = 0 ORDER BY step DESC LIMIT 5)) AS m
              FROM run_roles r WHERE r.run_id = :run_id AND r.role IN ('train_acc', 'val_acc'))) x
), me AS MATERIALIZED (
  SELECT root, CASE name WHEN '.' THEN '' ELSE name || '/' END AS lo,
         CASE name WHEN '.' THEN char(127) ELSE name || '0' END AS hi FROM runs WHERE run_id = :run_id
), family AS MATERIALIZED (
  -- The run and its child runs (PyTorch's add_hparams writes into a subdirectory).
  SELECT :run_id AS run_id
  UNION SELECT r.run_id FROM runs r, me WHERE r.root = me.root AND r.name >= me.lo AND r.name < me.hi
  UNION SELECT source_run_id FROM run_roles WHERE run_id = :run_id
), hp AS (
  SELECT DISTINCT CAST(h.value_num AS INTEGER) AS k, lower(h.key) AS key FROM hparams h
  WHERE h.run_id IN (SELECT run_id FROM family) AND h.value_type = 'number' AND h.value_num >= 2
    AND h.value_num = CAST(h.value_num AS INTEGER)
    AND (lower(h.key) IN ('num_labels', 'num_classes', 'n_classes', 'nclasses', 'nb_classes', 'num_class',
                          'n_class', 'class_num', 'classes', 'n_labels', 'vocab_size', 'n_vocab',
                          'tgt_vocab_size', 'output_classes')
         OR lower(h.key) LIKE '%.num_labels' OR lower(h.key) LIKE '%.num_classes'
         OR lower(h.key) LIKE '%.n_classes' OR lower(h.key) LIKE '%.vocab_size')
), common(k) AS (
  VALUES (2), (3), (4), (5), (10), (20), (100), (1000), (21128), (30522), (32000), (32100), (32128),
         (49152), (50257), (50304), (65536), (128256), (151936), (250002), (256000)
), cand AS (
  SELECT k, 'hparams' AS src, key || ' = ' || k || ' in the hyperparameters' AS why FROM hp
  UNION ALL
  SELECT c.k, 'accuracy', acc.tag || ' at ' || printf('%.3g', acc.a) || ', about 1/' || c.k
  FROM common c, acc WHERE acc.a BETWEEN (1 - :acc_tol) / c.k AND (1 + :acc_tol) / c.k
  UNION ALL
  SELECT k, 'common', 'the nearest common class count' FROM common
), levels AS (
  SELECT k, src, why, 'ln ' || k || ', a uniform guess over ' || k || ' classes' AS what, ln(k) AS level FROM cand
  UNION ALL
  SELECT k, src, why, '(K-1)/K^2 for K = ' || k || ', a mean-squared error on one-hot targets at a uniform guess',
         (k - 1.0) / (k * k) FROM cand
), matched AS MATERIALIZED (
  SELECT e.*, l.k, l.src, l.why, l.what, l.level,
         abs(ln(e.first_level / l.level)) AS off_first, abs(ln(e.last_level / l.level)) AS off_last,
         row_number() OVER (PARTITION BY e.series_id ORDER BY abs(ln(e.first_level / l.level))) AS rank
  FROM spans e, levels l
  WHERE abs(ln(e.first_level / l.level)) <= CASE l.src WHEN 'common' THEN :bare_tol ELSE :start_tol END
    AND abs(ln(e.last_level / l.level)) <= CASE l.src WHEN 'common' THEN :bare_tol ELSE :start_tol END
    -- The one-hot MSE level only where the tag says so or an accuracy shows 1/K.
    AND (l.level = ln(l.k) OR l.src = 'accuracy' OR lower(e.tag) LIKE '%mse%')
), judged AS MATERIALIZED (
  SELECT m.*,
         (SELECT avg(abs(ln(p.value / m.level)) <= :stay_tol) FROM role_points p WHERE p.run_id = :run_id
            AND p.series_id = m.series_id AND p.value_class = 0 AND p.value > 0) AS stay,
         (SELECT a FROM acc) AS acc
  FROM matched m WHERE rank = 1
)
SELECT series_id, lo AS onset_step, lo AS first_step, hi AS last_step,
       tag || ' has stayed at chance level for all ' || n || ' points (steps ' || lo || ' to ' || hi ||
         CASE WHEN epochs >= 1 THEN ', ' || printf('%.0f', epochs) || ' epochs' ELSE '' END || '): ' ||
         printf('%.4g', first_level) || ' at the start, ' || printf('%.4g', last_level) || ' now, against ' ||
         printf('%.4g', level) || ' = ' || what || ' (K from ' || why || '); the model predicts no better than a guess' AS message,
       json_object('series', tag, 'chance_level', level, 'classes', k, 'classes_from', src,
                   'first_level', first_level, 'last_level', last_level, 'share_at_chance', stay,
                   'points', n, 'epochs', epochs, 'seconds', seconds, 'accuracy', acc) AS evidence
FROM judged
WHERE stay >= :stay_share
  AND (hi - lo >= :min_steps OR epochs >= :min_epochs OR seconds >= :min_seconds)
  -- An accuracy above chance for this K says the model learned something.
  AND (acc IS NULL OR acc <= (1 + :acc_tol) / k OR k = 2 AND acc <= 0.75)
