#!/usr/bin/env bash
# The main job on an embedded default: build trainwatch, write the bundled example logdir (a
# few realistic runs, one of them sick), and run the daemon on it with its store in
# ./trainwatch.db and its log on the console, while a live run grows beside the others. The
# daemon's diagnosis logs findings as they fire; the periodic summary adds `trainwatch findings`.
# Ctrl-C stops it. TRAINWATCH_RUN_SECONDS=N stops it by itself after N seconds.
set -euo pipefail
cd "$(dirname "$0")/.."
tools/install-deps.sh
cmake --workflow --preset release >/dev/null
tw=build/release/trainwatch
logdir=${TRAINWATCH_EXAMPLE_LOGDIR:-example-logdir}
db=${TRAINWATCH_DB:-trainwatch.db}
seconds=${TRAINWATCH_RUN_SECONDS:-0}
[ -d "$logdir" ] || build/release/trainwatch-example "$logdir"

live_seconds=$(( seconds > 0 ? seconds : 120 ))
build/release/trainwatch-example --live "$live_seconds" "$logdir" &
live=$!
show() {
  echo
  echo "== while it runs, from another terminal: trainwatch status / query / runs --db $db"
  $tw status --db "$db" || true
  $tw query --db "$db" "SELECT run, tag, count(*) AS points, max(step) AS last_step,
    sum(value_class <> 'finite') AS non_finite FROM scalar_points
    WHERE tag IN ('train/loss', 'loss', 'epoch_loss') GROUP BY run, tag ORDER BY run" || true
  echo "== trainwatch findings --db $db   (trainwatch diagnose --db $db for the full report)"
  $tw findings --db "$db" || true
}
stop() { kill "$live" 2>/dev/null || true; [ -n "${daemon:-}" ] && kill -TERM "$daemon" 2>/dev/null || true; }
trap stop INT TERM EXIT

web=${TRAINWATCH_WEB:-127.0.0.1:8421}
echo "== trainwatch daemon --logdir $logdir --db $db --web $web   (Ctrl-C to stop)"
echo "== the web view: http://$web/   (its JSON API, docs/web.md: http://$web/api/runs)"
$tw daemon --logdir "$logdir" --db "$db" --rescan-interval 5 --web "$web" &
daemon=$!
if [ "$seconds" -gt 0 ]; then
  sleep "$(( seconds / 2 ))"; show
  sleep "$(( seconds - seconds / 2 ))"; show
  stop
else
  (while kill -0 "$daemon" 2>/dev/null; do sleep 30; show; done) &
fi
wait "$daemon" || true
