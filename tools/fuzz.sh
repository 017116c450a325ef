#!/usr/bin/env bash
# Builds the fuzz preset (clang 16, ASan + UBSan + libFuzzer; installs clang 16 if missing) and
# runs every fuzz target for MINUTES minutes each (default 2), one after the other, seeded from
# tests/data and ../shared/corpus where they hold inputs of the target's kind. Crashes, leaks,
# timeouts and sanitizer reports are kept as build/fuzz/findings/TARGET/crash-* (libFuzzer's
# names); each target's log is build/fuzz/findings/TARGET.log. Exits 1 if any target found
# something. Reproduce one with: build/fuzz/fuzz/TARGET build/fuzz/findings/TARGET/crash-...
#   tools/fuzz.sh [MINUTES] [TARGET...]     e.g. tools/fuzz.sh 10 fuzz_config
# Environment: JOBS (build parallelism, default 2), TW_CORPUS_DIR (the shared corpus).
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$(pwd)
minutes=${1:-2}
[[ "$minutes" =~ ^[1-9][0-9]*$ ]] || { echo "usage: $0 [MINUTES] [TARGET...]" >&2; exit 2; }
shift || true
all=(fuzz_event_file fuzz_wandb_log fuzz_jsonl_reader fuzz_config fuzz_rule_header fuzz_ingest)
targets=("$@")
[ ${#targets[@]} -eq 0 ] && targets=("${all[@]}")

command -v clang++-16 >/dev/null || tools/install-deps.sh --fuzz
cmake --preset fuzz >/dev/null
nice cmake --build build/fuzz -j "${JOBS:-2}" --target "${targets[@]}"

corpus=${TW_CORPUS_DIR:-}
for c in "$repo/../shared/corpus" "$repo/../../shared/corpus"; do
  [ -z "$corpus" ] && [ -d "$c" ] && corpus=$(cd "$c" && pwd)
done
[ -z "$corpus" ] && echo "note: ../shared/corpus not found; seeding from tests/data only"

out=build/fuzz/findings
mkdir -p "$out"
# A target's seeds: files of its kind, copied into a fresh seed folder (libFuzzer adds what it
# finds to the first corpus folder, which must not be the checkout or the shared corpus).
# Files over 1 MiB are left out: libFuzzer would cut them anyway.
seed() {
  local target=$1 dir=$out/$1.seeds
  rm -rf "$dir"
  mkdir -p "$dir"
  local -a from=()
  case "$target" in
    fuzz_event_file) from=(-name '*tfevents*') ;;
    fuzz_wandb_log) from=(-name '*.wandb') ;;
    fuzz_jsonl_reader) from=(-name '*.jsonl') ;;
    fuzz_config) from=(-name '*.toml') ;;
    fuzz_rule_header) from=(-name '*.sql') ;;
    fuzz_ingest) from=(-name '*tfevents*' -o -name '*.wandb' -o -name '*.jsonl' -o -name '*.log' \
                       -o -name 'metrics.csv' -o -name 'results.csv' -o -path '*/mlruns/*/metrics/*') ;;
  esac
  local -a roots=(tests/data docs sql)
  [ -n "$corpus" ] && roots+=("$corpus")
  local n=0
  while IFS= read -r -d '' f; do
    # fuzz_ingest and fuzz_jsonl_reader read their first two bytes as parameters.
    case "$target" in
      fuzz_ingest)
        case "$f" in
          *.wandb) kind='\x01' ;; *wandb-history.jsonl) kind='\x02' ;; *.jsonl) kind='\x03' ;;
          *.log) kind='\x04' ;; *metrics.csv) kind='\x05' ;; *results.csv) kind='\x06' ;;
          */metrics/*) kind='\x07' ;; *) kind='\x00' ;;
        esac
        { printf "$kind\x80"; head -c 65536 "$f"; } > "$dir/$n" ;;
      fuzz_jsonl_reader) { printf '\x07\x80'; head -c 1048576 "$f"; } > "$dir/$n" ;;
      *) head -c 1048576 "$f" > "$dir/$n" ;;
    esac
    n=$((n + 1))
    [ $n -ge 400 ] && break
  done < <(find "${roots[@]}" -type f \( "${from[@]}" \) -size -4M -print0 2>/dev/null | sort -z)
  echo "$dir"
}

found=0
for t in "${targets[@]}"; do
  seeds=$(seed "$t")
  mkdir -p "$out/$t"
  echo "== $t: $minutes min, $(ls "$seeds" | wc -l) seeds"
  set +e
  # Inputs large enough for their format's structure, small enough to keep executions fast
  # (the reader and ingest targets read their input several times, in small chunks).
  case "$t" in
    fuzz_jsonl_reader | fuzz_ingest) max_len=8192 ;;
    fuzz_config | fuzz_rule_header) max_len=16384 ;;
    *) max_len=65536 ;;
  esac
  nice "build/fuzz/fuzz/$t" "$seeds" -max_total_time=$((minutes * 60)) -timeout=20 -rss_limit_mb=4096 \
    -max_len=$max_len -artifact_prefix="$out/$t/" -print_final_stats=1 >"$out/$t.log" 2>&1
  rc=$?
  set -e
  grep -E '^(stat::number_of_executed_units|stat::average_exec_per_sec|stat::new_units_added)' "$out/$t.log" |
    sed 's/^/   /' || true
  if [ $rc -ne 0 ] || ls "$out/$t"/crash-* "$out/$t"/leak-* "$out/$t"/timeout-* "$out/$t"/oom-* >/dev/null 2>&1; then
    found=1
    echo "   FOUND something (exit $rc): $(ls "$out/$t" | tr '\n' ' ')"
    grep -m3 -E 'ERROR|runtime error|fuzz check failed' "$out/$t.log" | sed 's/^/   /' || true
  fi
done
exit $found
