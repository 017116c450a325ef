-- id: initial_loss_high
-- title: The first training loss is far above ln K, the loss of a uniform guess
-- severity: warning
-- roles: train_loss
-- needs_rows: run_classes
-- inhibited_by: non_finite_loss
-- cause: A freshly initialised K-class classifier (or language model over K tokens) predicts
--   nearly uniformly, so its cross-entropy starts at ln K. Starting far above it means the
--   logits are large and confidently wrong at step 0: inputs not normalized (pixels in
--   0..255), an output layer initialised with too large a scale (std 1 instead of ~0.02, or an
--   embedding's init copied to an untied head), a missing scaling of the logits (1/sqrt(d),
--   temperature); or the loss itself is scaled (summed over the batch or the tokens instead of
--   averaged, multiplied by a gradient-accumulation or loss-scale factor before it is logged).
--   The first steps are spent undoing the init (the "hockey stick"), and a scaled loss
--   multiplies the effective learning rate.
-- fix: Check the loss at step 0 against ln K before training. Normalize the inputs (divide by
--   255, subtract the mean); initialise the last layer small (std 0.01-0.02, or zero) and its
--   bias to the class prior; use reduction='mean'; log the loss before any scaling. A run that
--   recovered still spent its first steps on it: fix the init before the next one.
-- param ratio = 2: the first training loss over ln K, at least
-- param min_points = 3: training-loss points, at least
--
-- K is the largest class count or vocabulary size the hyperparameters name (`run_classes`: a
-- fine-tuned BERT names both num_labels = 2 and vocab_size = 30522; the larger ln K can only
-- keep the rule quiet); without one the rule stays silent: a guessed K cannot tell a bad init
-- from a loss of another kind. Only a start above ln K is reported: a start below it is what a
-- pretrained model shows. Losses that are not a cross-entropy over K (mse, l1, bce, kl, ctc,
-- dice, focal, reconstruction, contrastive terms, by their tag), runs whose hyperparameters
-- mention ctc or distillation (a CTC loss is summed over frames; a distillation loss carries
-- T^2), and runs resumed from another (their first point is not the init) are not judged.
-- The finding is a warning while the loss stays `ratio` times ln K or more (a loss scaled by a
-- sum, or a model that never undid its init); once it is below that, it stays as information
-- and says where the loss is, or at which step it came below ln K: the run recovered, and the
-- init is worth fixing before the next one. Two cross-entropies summed (two heads) start at
-- 2 ln K by design: a ratio of 2 is the edge, and such a run is information at most.
WITH k AS (
  SELECT max(k) AS k, (SELECT key FROM run_classes c WHERE c.run_id = :run_id ORDER BY k DESC LIMIT 1) AS key
  FROM run_classes WHERE run_id = :run_id
), barred AS (
  SELECT 1 FROM run_family f JOIN hparams h ON h.run_id = f.member
  WHERE f.run_id = :run_id AND (lower(h.key) LIKE '%ctc%' OR lower(h.key) LIKE '%distil%'
                                OR lower(h.key) LIKE '%teacher%')
  UNION ALL SELECT 1 FROM runs WHERE run_id = :run_id AND continues_run_id IS NOT NULL
), pts AS (
  SELECT series_id, tag, step, value FROM role_points
  WHERE run_id = :run_id AND role = 'train_loss' AND value_class = 0
), s AS MATERIALIZED (
  SELECT series_id, tag, count(*) AS n, min(step) AS lo, max(step) AS hi FROM pts
  WHERE NOT (lower(tag) GLOB '*mse*' OR lower(tag) GLOB '*mae*' OR lower(tag) GLOB '*l[12]loss*'
             OR lower(tag) GLOB '*l[12]_*' OR lower(tag) GLOB '*[_/]l[12]' OR lower(tag) GLOB '*huber*' OR lower(tag) GLOB '*bce*'
             OR lower(tag) GLOB '*kl*' OR lower(tag) GLOB '*ctc*' OR lower(tag) GLOB '*dice*'
             OR lower(tag) GLOB '*focal*' OR lower(tag) GLOB '*recon*' OR lower(tag) GLOB '*contrast*'
             OR lower(tag) GLOB '*nce*' OR lower(tag) GLOB '*triplet*' OR lower(tag) GLOB '*aux*'
             OR lower(tag) GLOB '*reg*' OR lower(tag) GLOB '*distil*')
  GROUP BY series_id HAVING count(*) >= :min_points
), ends AS MATERIALIZED (
  SELECT s.*, k.k, k.key, ln(k.k) AS level,
         (SELECT value FROM pts p WHERE p.series_id = s.series_id ORDER BY step LIMIT 1) AS first,
         (SELECT tw_median(value) FROM (SELECT value FROM pts p WHERE p.series_id = s.series_id
                                        ORDER BY step DESC LIMIT 5)) AS latest
  FROM s, k WHERE k.k IS NOT NULL AND NOT EXISTS (SELECT 1 FROM barred)
), judged AS (
  SELECT e.*, (SELECT min(step) FROM pts p WHERE p.series_id = e.series_id AND p.value <= e.level) AS recovered
  FROM ends e
  -- Far above, and lower now than there: a loss that climbs from its first point is diverging
  -- (the divergence rules' case), not starting high.
  WHERE first >= :ratio * level AND latest < first
)
SELECT series_id, lo AS onset_step, lo AS first_step, hi AS last_step,
       CASE WHEN latest >= :ratio * level THEN 'warning' ELSE 'info' END AS severity,
       tag || ' starts at ' || printf('%.4g', first) || ' (step ' || lo || '), ' || printf('%.3g', first / level) ||
         'x ln ' || k || ' = ' || printf('%.4g', level) || ', the loss of a uniform guess over ' || k ||
         ' classes (K from ' || key || ' = ' || k || ' in the hyperparameters)' ||
         CASE WHEN latest >= :ratio * level THEN '; it is still ' || printf('%.4g', latest) || ', ' ||
                   printf('%.3g', latest / level) || 'x ln K'
              WHEN latest > level THEN '; it is ' || printf('%.4g', latest) || ' now, still above ln K'
              ELSE '; it came below ln K at step ' || recovered || ', ' || printf('%.0f', 100.0 * (recovered - lo) / max(1, hi - lo)) ||
                   '% into the run' END AS message,
       json_object('series', tag, 'first', first, 'classes', k, 'classes_from', key, 'chance_level', level,
                   'ratio', first / level, 'latest', latest, 'recovered_step', recovered) AS evidence
FROM judged
