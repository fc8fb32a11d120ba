#!/usr/bin/env bash
# The Prometheus files in deploy/prometheus: the scrape config and rules pass promtool's checks,
# the rules' unit tests pass, and every alert has a test.
set -euo pipefail
cd "$(dirname "$0")/../deploy/prometheus"
promtool check config prometheus.yml >/dev/null
promtool test rules tests/lanes.rules.test.yml
missing=0
for alert in $(sed -n 's/^ *- alert: *//p' rules/lanes.rules.yml); do
    if ! grep -q "alertname: $alert\$" tests/lanes.rules.test.yml; then
        echo "check-prometheus: alert $alert has no test in tests/lanes.rules.test.yml" >&2
        missing=1
    fi
done
exit $missing
