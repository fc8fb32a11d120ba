#!/usr/bin/env bash
# Installs, from Debian 12's packages, whatever lanes needs that is missing.
# Idempotent: installs nothing (and touches no package list) when everything is present.
#   scripts/install-deps.sh --run     build and run the servers (what scripts/run.sh needs)
#   scripts/install-deps.sh           and test: Catch2, clang, Prometheus, Chromium, Node.js...
#   scripts/install-deps.sh --bench   and what bench/scripts/ runs: gnuplot for the charts, the
#                                     proxies it compares with (nginx, HAProxy), perf (system
#                                     calls per relayed event)
set -euo pipefail

mode=${1:-test}
case "$mode" in
--run | test | --bench) ;;
*)
    echo "usage: scripts/install-deps.sh [--run | --bench]" >&2
    exit 2
    ;;
esac

packages=(
    cmake ninja-build g++ pkg-config ccache git curl
    libboost1.81-dev libboost-system1.81-dev   # Asio, Beast (compiled once, see common/)
    nlohmann-json3-dev libxxhash-dev libopenblas-dev libsimdjson-dev
    libmimalloc-dev                            # malloc for the servers (common/allocator.hpp)
    libssl-dev openssl                         # key digests and TLS
    libzmq3-dev cppzmq-dev                     # KV events (ZeroMQ; msgpack is our own, see common/kv_events)
    libpcre2-dev libutf8proc-dev               # model tokenizers: split regexes (JIT), NFC (common/prompt)
)
if [ "$mode" != "--run" ]; then
    packages+=(
        catch2                                 # v2, header catch2/catch.hpp
        clang-format                           # the format check in the test suite
        prometheus                             # promtool: /metrics lint, the rules' tests
        systemd                                # systemd-analyze verify of deploy/systemd
        chromium                               # the live page's test, headless
        clang-14 libclang-rt-14-dev            # the sanitizer tiers and libFuzzer targets (CI)
        python3                                # scripts/check-coawait.py, the soak driver
        python3-jinja2                         # the chat-template reference (tests/tokenizer)
        python3-numpy                          # the checkpoint forward-pass reference (tests/models)
        util-linux                             # prlimit, for the fd-starved router test
    )
fi
if [ "$mode" = "--bench" ]; then
    packages+=(gnuplot-nox nginx-light haproxy linux-perf)
fi

missing=()
for p in "${packages[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" || missing+=("$p")
done
# Node.js and npm (kubernetes-models for deploy/k8s, playwright-core for the live page's test):
# Debian's only where there are none, so a Node.js installed otherwise (with its own npm) stays.
if [ "$mode" != "--run" ]; then
    command -v node >/dev/null || missing+=(nodejs)
    command -v npm >/dev/null || missing+=(npm)
fi
if [ ${#missing[@]} -eq 0 ]; then
    exit 0
fi

echo "install-deps: installing ${missing[*]}"
sudo=""
if [ "$(id -u)" -ne 0 ]; then
    command -v sudo >/dev/null || { echo "install-deps: need root or sudo to install" >&2; exit 1; }
    sudo="sudo"
fi
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
$sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
# Debian's prometheus package starts a server where systemd runs; lanes only needs promtool.
if command -v systemctl >/dev/null && systemctl is-active --quiet prometheus 2>/dev/null; then
    $sudo systemctl disable --now prometheus >/dev/null 2>&1 || true
fi
echo "install-deps: done"
