#!/usr/bin/env bash
# Runs one sharded httplab load on Kubernetes and copies the merged result out.
#
#   deploy/kubernetes/run.sh -n 3 [-i IMAGE] [-d DELAY_S] [-o OUT_DIR] -- LOAD_ARGS...
#
# LOAD_ARGS are `httplab load` arguments (target URL, rate, duration ...),
# without --client, --start-at, --run-id and --json, which each shard gets.
# Steps: results volume; ConfigMap with a fresh run id and a start instant
# DELAY_S seconds ahead; the Indexed Job (N shards); wait; the merge Job;
# wait; copy /results/RUN_ID (shards, merged.json, report/) to OUT_DIR.
# --dry-run prints the manifests it would apply and applies nothing.
set -euo pipefail

here="$(cd "$(dirname "$0")" && pwd)"
kubectl="${KUBECTL:-kubectl}"
shards=3
image="httplab:latest"
delay=60
out="httplab-results"
timeout_s=3600
dry_run=0

usage() {
  sed -n '2,11p' "$0" | sed 's/^# \{0,1\}//'
  echo
  echo "options: -n SHARDS (3)  -i IMAGE (httplab:latest)  -d DELAY_S before the shared start (60)"
  echo "         -o OUT_DIR (httplab-results)  -t TIMEOUT_S per Job (3600)  --dry-run"
}

while [ $# -gt 0 ]; do
  case "$1" in
    -n) shards="$2"; shift 2 ;;
    -i) image="$2"; shift 2 ;;
    -d) delay="$2"; shift 2 ;;
    -o) out="$2"; shift 2 ;;
    -t) timeout_s="$2"; shift 2 ;;
    --dry-run) dry_run=1; shift ;;
    -h|--help) usage; exit 0 ;;
    --) shift; break ;;
    *) echo "run.sh: unknown option $1 (put httplab load arguments after --)" >&2; exit 2 ;;
  esac
done
[ $# -gt 0 ] || { echo "run.sh: give the httplab load arguments after --" >&2; exit 2; }
case "$shards" in ''|*[!0-9]*|0) echo "run.sh: -n needs a positive number" >&2; exit 2 ;; esac
for a in "$@"; do
  case "$a" in
    --client*|--start-at*|--run-id*|--json*)
      echo "run.sh: $a is set per shard by the Job; leave it out" >&2; exit 2 ;;
    *[[:space:]\"\']*)
      echo "run.sh: argument '$a' contains spaces or quotes, which LOAD_ARGS cannot carry" >&2; exit 2 ;;
  esac
done
load_args="$*"

start_at="$(date -u -d "+${delay} seconds" +%Y-%m-%dT%H:%M:%SZ)"
run_id="httplab-$(date -u +%Y%m%dt%H%M%S)-$$"

config() {
  cat <<YAML
apiVersion: v1
kind: ConfigMap
metadata:
  name: httplab-run
  labels:
    app.kubernetes.io/name: httplab
data:
  RUN_ID: "$run_id"
  START_AT: "$start_at"
  SHARDS: "$shards"
  LOAD_ARGS: "$load_args"
  MERGE_WAIT_S: "$timeout_s"
YAML
}

# The Job manifests with this run's shard count and image.
job() {
  sed -e "s/^  completions: 3\$/  completions: $shards/" \
      -e "s/^  parallelism: 3\$/  parallelism: $shards/" \
      -e "s|image: httplab:latest|image: $image|" "$here/$1"
}

if [ "$dry_run" = 1 ]; then
  cat "$here/results-pvc.yaml"; echo "---"
  config; echo "---"
  job load-job.yaml; echo "---"
  job merge-job.yaml; echo "---"
  job results-pod.yaml
  exit 0
fi

echo "== run $run_id: $shards shards start at $start_at"
"$kubectl" apply -f "$here/results-pvc.yaml"
"$kubectl" delete job httplab-load httplab-merge --ignore-not-found --wait=true
"$kubectl" delete pod httplab-results --ignore-not-found --wait=true
config | "$kubectl" apply -f -
job load-job.yaml | "$kubectl" apply -f -
if ! "$kubectl" wait --for=condition=complete job/httplab-load --timeout="$((delay + timeout_s))s"; then
  echo "== the load Job did not complete; its pods' logs:" >&2
  "$kubectl" logs -l app.kubernetes.io/component=load --prefix --tail=50 >&2 || true
  exit 1
fi
job merge-job.yaml | "$kubectl" apply -f -
if ! "$kubectl" wait --for=condition=complete job/httplab-merge --timeout="${timeout_s}s"; then
  "$kubectl" logs job/httplab-merge --all-containers >&2 || true
  exit 1
fi
"$kubectl" logs job/httplab-merge
job results-pod.yaml | "$kubectl" apply -f -
"$kubectl" wait --for=condition=Ready pod/httplab-results --timeout=300s
mkdir -p "$out"
"$kubectl" cp "httplab-results:/results/$run_id" "$out/$run_id"
"$kubectl" delete pod httplab-results --wait=false
echo "== results in $out/$run_id: merged.json, report/index.html, shard-*.json"
