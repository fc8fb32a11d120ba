#!/usr/bin/env bash
# Checks commit subjects against CONTRIBUTING.md: at most 72 characters, a component prefix
# ("router: ", "docs: ", ...), a blank line before any body.
#   scripts/check-commits.sh                every commit after the rule's first (exit 77 without
#                                           that history, e.g. in a shallow clone)
#   scripts/check-commits.sh --message FILE one message (the commit-msg hook)
set -euo pipefail
cd "$(dirname "$0")/.."
base=5449e697d1992b718a7b71085f5f6a88f4f2723e # the last commit before the rule
prefixes='router|replica|common|bench|docs|tests|deploy|scripts|ci'
check() { # check SUBJECT SECOND_LINE NAME
    local problems=()
    [ "${#1}" -le 72 ] || problems+=("subject is ${#1} characters (at most 72)")
    [[ "$1" =~ ^($prefixes)(,\ ?($prefixes))*:\ [^\ ] ]] ||
        problems+=("subject has no component prefix ($prefixes, then ': ')")
    [ -z "$2" ] || problems+=("no blank line between subject and body")
    if [ ${#problems[@]} -gt 0 ]; then
        printf '%s: %s\n' "$3" "${problems[@]}" >&2
        return 1
    fi
}
if [ "${1:-}" = --message ]; then
    text=$(grep -v '^#' "$2" || true)
    check "$(sed -n 1p <<<"$text")" "$(sed -n 2p <<<"$text")" "commit message"
    exit
fi
git rev-parse --git-dir >/dev/null 2>&1 && git cat-file -e "$base^{commit}" 2>/dev/null || {
    echo "no history back to $base here: nothing to check" >&2
    exit 77
}
bad=0
for c in $(git rev-list --no-merges "$base..HEAD"); do
    check "$(git log -1 --format=%s "$c")" "$(git log -1 --format=%B "$c" | sed -n 2p)" \
        "$(git log -1 --format=%h "$c")" || bad=1
done
exit $bad
