#!/usr/bin/env bash
# Renders every overlay of deploy/k8s with `kubectl kustomize` and validates each object against
# the Kubernetes API schema and the Prometheus Operator's CRDs (npm kubernetes-models, installed
# from deploy/k8s/validate's lock file into build folder $1), plus lanes' own rules
# (validate.mjs). No cluster is needed.
#   scripts/check-k8s.sh build
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=$(cd "${1:?usage: scripts/check-k8s.sh BUILD_DIR}" && pwd)
tools="$build/k8s-validate"
if ! command -v kubectl >/dev/null; then
    echo "check-k8s: kubectl (with kustomize) is not installed: nothing rendered, skipped" >&2
    exit 77
fi
"$root/scripts/npm-tools.sh" "$root/deploy/k8s/validate" "$tools"
status=0
"$root/scripts/check-router-config.sh" "$root/deploy/k8s/base/router.json" "$build" || status=1
for overlay in "$root"/deploy/k8s/overlays/*/; do
    name=$(basename "$overlay")
    kubectl kustomize "$overlay" >"$tools/$name.yaml"
    node "$tools/validate.mjs" "$tools/$name.yaml" || status=1
done
exit $status
