#!/usr/bin/env bash
# Runs one sharded httplab load from several client machines over plain ssh,
# collects the shards' results and merges them.
#
#   deploy/ssh/run-shards.sh [-d DELAY_S] [-o OUT_DIR] [-b REMOTE_HTTPLAB] HOST... -- LOAD_ARGS...
#
# Host k of the N given runs `httplab load LOAD_ARGS --client k/N --start-at T
# --run-id R --json FILE`, all with the same T (DELAY_S seconds from now) and R.
# Each host needs httplab on its PATH (or -b PATH), key-based ssh access and a
# synchronised clock (chrony/NTP). Results are copied back with scp into
# OUT_DIR/RUN_ID/shard-k.json and merged into OUT_DIR/RUN_ID/merged.json by the
# local httplab. SSH, SCP and HTTPLAB in the environment replace the commands
# used (with options, e.g. SSH="ssh -p 2222 -i KEY", SCP="scp -P 2222 -i KEY"); --dry-run prints the commands without running them.
set -euo pipefail

# SSH and SCP may carry options ("ssh -p 2222 -i KEY"): split them into words.
read -r -a ssh_cmd <<<"${SSH:-ssh}"
read -r -a scp_cmd <<<"${SCP:-scp}"
httplab="${HTTPLAB:-httplab}"
remote_httplab="httplab"
delay=15
out="httplab-results"
dry_run=0
ssh_opts=(-o BatchMode=yes -o ConnectTimeout=10)

usage() { sed -n '2,14p' "$0" | sed 's/^# \{0,1\}//'; }

hosts=()
while [ $# -gt 0 ]; do
  case "$1" in
    -d) delay="$2"; shift 2 ;;
    -o) out="$2"; shift 2 ;;
    -b) remote_httplab="$2"; shift 2 ;;
    --dry-run) dry_run=1; shift ;;
    -h|--help) usage; exit 0 ;;
    --) shift; break ;;
    -*) echo "run-shards.sh: unknown option $1" >&2; exit 2 ;;
    *) hosts+=("$1"); shift ;;
  esac
done
n=${#hosts[@]}
[ "$n" -gt 0 ] || { echo "run-shards.sh: give at least one client host" >&2; exit 2; }
[ $# -gt 0 ] || { echo "run-shards.sh: give the httplab load arguments after --" >&2; exit 2; }
for a in "$@"; do
  case "$a" in
    --client*|--start-at*|--run-id*|--json*)
      echo "run-shards.sh: $a is set per shard; leave it out" >&2; exit 2 ;;
  esac
done

start_at="$(date -u -d "+${delay} seconds" +%Y-%m-%dT%H:%M:%SZ)"
run_id="httplab-$(date -u +%Y%m%dt%H%M%S)-$$"
dir="$out/$run_id"
remote_file() { echo "/tmp/$run_id-shard-$1.json"; }

run() {
  if [ "$dry_run" = 1 ]; then printf '%q ' "$@"; echo; else "$@"; fi
}

[ "$dry_run" = 1 ] || mkdir -p "$dir"
echo "== run $run_id: $n shards start at $start_at" >&2
pids=()
for k in "${!hosts[@]}"; do
  # The remote shell parses this line: quote every word.
  remote="$(printf '%q ' "$remote_httplab" load "$@" \
    --client "$k/$n" --start-at "$start_at" --run-id "$run_id" --json "$(remote_file "$k")")"
  if [ "$dry_run" = 1 ]; then
    run "${ssh_cmd[@]}" "${ssh_opts[@]}" "${hosts[$k]}" "$remote"
  else
    "${ssh_cmd[@]}" "${ssh_opts[@]}" "${hosts[$k]}" "$remote" >"$dir/shard-$k.log" 2>&1 &
    pids+=("$!")
  fi
done
failed=0
for k in "${!pids[@]}"; do
  if ! wait "${pids[$k]}"; then
    echo "== shard $k/$n on ${hosts[$k]} failed; its output:" >&2
    tail -n 20 "$dir/shard-$k.log" >&2 || true
    failed=1
  fi
done
[ "$failed" = 0 ] || exit 1
for k in "${!hosts[@]}"; do
  run "${scp_cmd[@]}" "${ssh_opts[@]}" -q "${hosts[$k]}:$(remote_file "$k")" "$dir/shard-$k.json"
done
shard_files=()
for k in "${!hosts[@]}"; do shard_files+=("$dir/shard-$k.json"); done
run "$httplab" merge "${shard_files[@]}" -o "$dir/merged.json"
run "$httplab" report "$dir/merged.json" -o "$dir/report"
[ "$dry_run" = 1 ] || echo "== results in $dir: merged.json, report/index.html, shard-*.json" >&2
