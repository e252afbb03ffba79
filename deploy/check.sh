#!/usr/bin/env bash
# Checks deploy/: every Kubernetes manifest, and the manifests run.sh renders,
# against the Kubernetes API schemas (strict: unknown fields fail), for the
# oldest and newest Kubernetes versions we support; the scripts parse and
# their dry runs work. Needs `kubernetes-validate` (PyPI).
set -euo pipefail
cd "$(dirname "$0")"
versions=(1.30.0 1.37.0)
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT

bash -n kubernetes/run.sh ssh/run-shards.sh
kubernetes/run.sh --dry-run -n 5 -i registry.example.org/httplab:ci -- \
  http://web:8080/index.html --rate 5000 --duration 30s >"$tmp/rendered.yaml"
grep -q '^  completions: 5$' "$tmp/rendered.yaml"
grep -q '^  parallelism: 5$' "$tmp/rendered.yaml"
grep -q 'SHARDS: "5"' "$tmp/rendered.yaml"
# What the schemas cannot check (free-form strings): the Job is Indexed and
# each pod turns its completion index into its shard, on the shared start.
grep -q '^  completionMode: Indexed$' kubernetes/load-job.yaml
grep -q -- '--client "$JOB_COMPLETION_INDEX/$SHARDS"' kubernetes/load-job.yaml
grep -q -- '--start-at "$START_AT"' kubernetes/load-job.yaml
grep -q 'httplab merge "$dir"/shard-\*.json' kubernetes/merge-job.yaml
for v in "${versions[@]}"; do
  kubernetes-validate --strict --quiet -k "$v" kubernetes/*.yaml "$tmp/rendered.yaml"
done
ssh/run-shards.sh --dry-run h0 h1 -- http://web:8080/ --rate 10 >"$tmp/ssh.txt" 2>/dev/null
grep -q -- '--client\\ 1/2' "$tmp/ssh.txt"
echo "deploy: manifests valid for Kubernetes ${versions[*]}; scripts ok"
