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
-- param min_steps = 1000: and the stay spans this many steps, or min_epochs epochs, or
--   min_seconds of the run's time, or min_evals evaluations (a classifier starts at chance:
--   only a long stay counts)
-- param min_epochs = 2: epochs spent at chance, alternatively (from an epoch series, or the
--   steps of a Keras `epoch_*` tag, which are epochs)
-- param min_seconds = 1800: seconds of wall time spent at chance, alternatively
-- param min_evals = 3: validation evaluations during the stay, alternatively (each one a
--   look at held-out data that found no learning)
-- param start_tol = 0.03: the stay's median and its latest tenth (and, for a stay from the
--   start, its first tenth, or not below it when K is known) are within this (relative) of the chance level, for a K the
--   hparams or an accuracy at chance give
-- param bare_tol = 0.015: the same for a K guessed from common class counts alone
-- param stay_tol = 0.05: the stay begins after the last time the curve (the median of each
--   fiftieth of the run, 5 points at least) was this much (relative) below chance: below
--   chance is learning; above it (a blow-up, a bouncing bias) is no better than a guess
-- param acc_tol = 0.3: an accuracy within this (relative) of 1/K is at chance; one above
--   (1 + acc_tol)/K shows learning and keeps the rule quiet, unless it is below 2/K: the
--   share of whichever class a net that learned only the prior guesses
--
-- K comes from the hyperparameters (num_labels, num_classes, vocab_size, ...), from an
-- accuracy series at chance (1/K for any K, or the majority share), or, with tighter bounds, from
-- common class counts and vocabulary sizes. The loss must sit at ln K (or at the one-hot MSE
-- level (K-1)/K^2 when the tag says mse or the accuracy is at 1/K) up to its latest values,
-- since where it last did better than chance: from its first values (a dead init, shuffled
-- labels, an LR far too low), or since it came back to chance after learning (a blow-up that
-- killed the ReLUs; then K must come from the hparams or an accuracy, not a guess). A loss
-- that started at chance and later fell (an S-curve, or any classifier after its first
-- steps) is not reported, and a finding resolves once it falls. A stay of a few points is
-- what every classifier shows at its start, hence min_steps / min_epochs / min_seconds /
-- min_evals. The training accuracy is read only without a validation one: a net can
-- memorise shuffled labels (train accuracy rising) while it predicts held-out data at chance.
WITH pts AS (
  SELECT series_id, tag, step, wall_time, value FROM role_points
  WHERE run_id = :run_id AND role = 'train_loss' AND value_class = 0 AND value > 0
), s AS MATERIALIZED (
  -- Each series' span; a "tenth" is a tenth of its steps, and two logging intervals at least
  -- (three points of a 10-point run).
  SELECT series_id, tag, count(*) AS n, min(step) AS lo, max(step) AS hi,
         max(0.1 * (max(step) - min(step)), 2.0 * (max(step) - min(step)) / max(1, count(*) - 1)) AS tenth,
         max(1, min(50, count(*) / 5)) AS parts
  FROM pts GROUP BY series_id HAVING count(*) >= :min_points
), ends AS MATERIALIZED (
  -- The latest level: the median of the last tenth.
  SELECT s.*, tw_median(CASE WHEN p.step >= s.hi - s.tenth THEN p.value END) AS last_level
  FROM s JOIN pts p USING (series_id) GROUP BY s.series_id
), smooth AS MATERIALIZED (
  -- The curve as the median of each fiftieth of its steps (5 points at least each).
  SELECT series_id, min(step) AS from_step, max(step) AS to_step, tw_median(value) AS v
  FROM (SELECT p.series_id, p.step, p.value,
               CAST((p.step - s.lo) * s.parts / (s.hi - s.lo + 1) AS INTEGER) AS part
        FROM pts p JOIN s USING (series_id))
  GROUP BY series_id, part
), acc_series AS MATERIALIZED (
  -- Accuracy series (a percentage read as a fraction): validation ones where there are any.
  SELECT series_id, tag, CASE WHEN max(value) > 1 THEN 100.0 ELSE 1.0 END AS scale
  FROM role_points r WHERE run_id = :run_id AND value_class = 0
    AND role = CASE WHEN EXISTS (SELECT 1 FROM run_roles WHERE run_id = :run_id AND role = 'val_acc')
                    THEN 'val_acc' ELSE 'train_acc' END
  GROUP BY series_id
), acc AS MATERIALIZED (
  -- The highest recent accuracy (median of the last 5 points).
  SELECT a.tag, (SELECT tw_median(value) / a.scale FROM (SELECT value FROM role_points q WHERE q.run_id = :run_id
                   AND q.series_id = a.series_id AND q.value_class = 0 ORDER BY step DESC LIMIT 5)) AS a, a.series_id, a.scale
  FROM acc_series a ORDER BY 2 DESC LIMIT 1
), hp AS (
  SELECT k, key FROM run_classes WHERE run_id = :run_id
), common(k) AS (
  VALUES (2), (3), (4), (5), (10), (20), (100), (1000), (21128), (30522), (32000), (32100), (32128),
         (49152), (50257), (50304), (65536), (128256), (151936), (250002), (256000)
), cand AS (
  SELECT k, 'hparams' AS src, key || ' = ' || k || ' in the hyperparameters' AS why FROM hp
  UNION ALL
  -- An accuracy at 1/K, or between that and 2/K (the share of the one class a net that learned
  -- only the prior guesses, in an imbalanced set; for K = 2, up to 0.75).
  SELECT c.k, 'accuracy', acc.tag || ' at ' || printf('%.3g', acc.a) ||
           CASE WHEN acc.a <= (1 + :acc_tol) / c.k THEN ', about 1/' || c.k
                ELSE ', one class''s share among ' || c.k END
  FROM common c, acc WHERE acc.a BETWEEN (1 - :acc_tol) / c.k AND CASE c.k WHEN 2 THEN 0.75 ELSE 2.0 / c.k END
  UNION ALL
  -- And any K the accuracy's 1/K names, common or not (8 classes: an accuracy at 0.13): the
  -- two integers either side of 1/accuracy; the loss must then sit at ln K as well.
  SELECT k, 'accuracy', acc.tag || ' at ' || printf('%.3g', acc.a) || ', about 1/' || k
  FROM (SELECT CAST(1.0 / a AS INTEGER) AS k FROM acc UNION SELECT CAST(1.0 / a AS INTEGER) + 1 FROM acc), acc
  WHERE acc.a BETWEEN 0.002 AND 0.5 AND k >= 2 AND acc.a BETWEEN (1 - :acc_tol) / k AND (1 + :acc_tol) / k
    AND k NOT IN (SELECT k FROM common)
  UNION ALL
  SELECT k, 'common', 'the nearest common class count' FROM common
), levels AS (
  SELECT k, src, why, 'ln ' || k || ', a uniform guess over ' || k || ' classes' AS what, ln(k) AS level FROM cand
  UNION ALL
  SELECT k, src, why, '(K-1)/K^2 for K = ' || k || ', a mean-squared error on one-hot targets at a uniform guess',
         (k - 1.0) / (k * k) FROM cand
), latest AS MATERIALIZED (
  -- Levels the latest values sit at.
  SELECT e.*, l.k, l.src, l.why, l.what, l.level,
         CASE l.src WHEN 'common' THEN :bare_tol ELSE :start_tol END AS tol
  FROM ends e, levels l
  WHERE abs(ln(e.last_level / l.level)) <= CASE l.src WHEN 'common' THEN :bare_tol ELSE :start_tol END
    -- The one-hot MSE level only where the tag says so or an accuracy shows 1/K.
    AND (l.level = ln(l.k) OR l.src = 'accuracy' OR lower(e.tag) LIKE '%mse%')
), stay AS MATERIALIZED (
  -- The stay at chance begins after the curve last did better than chance.
  SELECT x.*, COALESCE((SELECT min(p.step) FROM pts p WHERE p.series_id = x.series_id AND p.step >
                          (SELECT max(to_step) FROM smooth m WHERE m.series_id = x.series_id
                             AND m.v < x.level * exp(-:stay_tol))), x.lo) AS since
  FROM latest x
), stayed AS MATERIALIZED (
  -- The stay's level, points and wall time, in one pass over it.
  SELECT y.*, (SELECT json_object('level', tw_median(value), 'n', count(*), 'seconds', max(wall_time) - min(wall_time))
               FROM pts p WHERE p.series_id = y.series_id AND p.step >= y.since) AS st
  FROM stay y
), measured AS MATERIALIZED (
  SELECT y.*, json_extract(st, '$.level') AS stay_level, json_extract(st, '$.n') AS stay_n,
         json_extract(st, '$.seconds') AS seconds,
         (SELECT tw_median(value) FROM pts p WHERE p.series_id = y.series_id AND p.step <= y.lo + y.tenth) AS first_level,
         -- Epochs: a Keras epoch_* tag counts them in its steps; else an epoch series.
         CASE WHEN y.tag LIKE 'epoch\_%' ESCAPE '\' THEN y.hi - y.since ELSE
           (SELECT max(value) - min(value) FROM role_points e WHERE e.run_id = :run_id AND e.role = 'epoch'
              AND e.value_class = 0 AND e.step BETWEEN y.since AND y.hi) END AS epochs,
         (SELECT count(DISTINCT step) FROM role_points v WHERE v.run_id = :run_id AND v.value_class = 0
            AND v.role IN ('val_loss', 'val_acc', 'val_metric') AND v.step BETWEEN y.since AND y.hi) AS evals,
         (SELECT a FROM acc) AS acc
  FROM stayed y
), judged AS MATERIALIZED (
  SELECT m.*, row_number() OVER (PARTITION BY series_id ORDER BY abs(ln(stay_level / level))) AS rank
  FROM measured m
  WHERE abs(ln(stay_level / level)) <= tol
    -- A stay from the start began at chance; one that came back there needs a K not guessed.
    -- With K known (hparams, an accuracy), a start above chance (a blow-up in the first steps,
    -- an init that starts high) is no better than a guess either: only a start below it says
    -- the model once did better.
    AND (since = lo AND (abs(ln(first_level / level)) <= tol OR src != 'common' AND ln(first_level / level) > -tol)
         OR since > lo AND src != 'common')
    AND stay_n >= :min_points
)
SELECT series_id, since AS onset_step, since AS first_step, hi AS last_step,
       tag || CASE WHEN since = lo THEN ' has stayed at chance level for all ' || n || ' points (steps '
                   ELSE ' came back to chance level and has stayed there for ' || stay_n || ' points (steps ' END ||
         since || ' to ' || hi ||
         CASE WHEN epochs >= 1 THEN ', ' || printf('%.0f', epochs) || ' epochs' ELSE '' END ||
         CASE WHEN evals >= 1 THEN ', ' || evals || ' evaluations' ELSE '' END || '): ' ||
         printf('%.4g', stay_level) || ' over that stretch, ' || printf('%.4g', last_level) || ' now, against ' ||
         printf('%.4g', level) || ' = ' || what || ' (K from ' || why || '); the model predicts no better than a guess' AS message,
       json_object('series', tag, 'chance_level', level, 'classes', k, 'classes_from', src,
                   'first_level', first_level, 'stay_level', stay_level, 'last_level', last_level,
                   'since_step', since, 'points', stay_n, 'epochs', epochs, 'evaluations', evals,
                   'seconds', seconds, 'accuracy', acc) AS evidence
FROM judged
WHERE rank = 1
  AND (hi - since >= :min_steps OR epochs >= :min_epochs OR seconds >= :min_seconds OR evals >= :min_evals)
  -- An accuracy above chance for this K says the model learned something, unless it is below
  -- 2/K: a net guessing from the prior predicts some one class and scores that class's share
  -- (a majority share above 2/K would put the label entropy, which a net that learned only the
  -- prior reaches, well below ln K). Below 2/K it may also move, flat or not: the class guessed
  -- changes between evaluations (0.12, 0.16, 0.16 on a held-out draw with its loss at ln 10).
  AND (acc IS NULL OR acc <= (1 + :acc_tol) / k OR k = 2 AND acc <= 0.75 OR k > 2 AND acc <= 2.0 / k)
