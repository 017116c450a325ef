#!/usr/bin/env bash
# The main job on an embedded default: build trainwatch, write the bundled example logdir (a
# few realistic runs, one of them sick), ingest it into ./trainwatch.db, and show what is there.
set -euo pipefail
cd "$(dirname "$0")/.."
tools/install-deps.sh
cmake --workflow --preset release >/dev/null
tw=build/release/trainwatch
logdir=${TRAINWATCH_EXAMPLE_LOGDIR:-example-logdir}
db=${TRAINWATCH_DB:-trainwatch.db}
[ -d "$logdir" ] || build/release/trainwatch-example "$logdir"

echo "== trainwatch ingest --db $db $logdir"
$tw ingest --db "$db" "$logdir"
echo
echo "== trainwatch runs --db $db"
$tw runs --db "$db"
echo
echo "== the sick run: where did the loss stop being finite?"
$tw query --db "$db" "SELECT run, tag, min(step) AS first_step, value_class
  FROM scalar_points WHERE value_class <> 'finite' GROUP BY run, tag, value_class ORDER BY first_step"
echo
echo "== best validation loss per run"
$tw query --db "$db" "SELECT run, tag, min(value) AS best, step FROM scalar_points
  WHERE tag LIKE '%loss%' AND (tag LIKE '%val%' OR run LIKE '%validation%') GROUP BY run, tag"
echo
echo "== hyperparameters"
$tw query --db "$db" "SELECT run, key, value FROM run_hparams ORDER BY run, key"
echo
echo "== restarts trainwatch detected"
$tw query --db "$db" "SELECT r.name AS run, e.step, e.detail FROM run_events e JOIN runs r USING (run_id)
  WHERE e.kind = 'restart'"
echo
echo "Query it yourself: sqlite3 -readonly $db 'SELECT * FROM scalar_points LIMIT 5'"
