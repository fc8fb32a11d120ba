# Sourced by the bench scripts: a scratch folder ($work) and the background processes started
# there ($pids), both cleaned up when the script exits, however it exits.
work=$(mktemp -d)
pids=()
cleanup() {
    for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
    wait 2>/dev/null || true
    rm -rf "$work"
}
trap cleanup EXIT
