#!/usr/bin/env bash
# Set-up and entry point for local use and CI.
#   ./run_local.sh          create .venv, install, run the Auth0 sample migration, print the summary
#   ./run_local.sh test     same set-up (with test extras), then the whole test suite
#   ./run_local.sh demo-push   start the loopback admin API test server, migrate the sample
#                              with --push-url, verify through events search, stop the server
# Extra arguments after `test` go to pytest.
set -euo pipefail
cd "$(dirname "$0")"
PY=${PYTHON:-python3.11}
command -v "$PY" >/dev/null 2>&1 || PY=python3
if [ ! -x .venv/bin/python ]; then
  "$PY" -m venv .venv
fi
stamp=.venv/.installed-$(cat setup.py | sha256sum | cut -c1-16)
mode=${1:-run}
want=""
[ "$mode" = test ] || [ "$mode" = demo-push ] && want="[test]"
if [ ! -f "$stamp$want" ]; then
  .venv/bin/python -m pip install -q --disable-pip-version-check --upgrade pip >/dev/null
  .venv/bin/python -m pip install -q --disable-pip-version-check -e ".$want"
  touch "$stamp$want"
fi
case "$mode" in
  test)
    shift || true
    # Static checks first: they take seconds and fail before a four-minute suite starts.
    .venv/bin/ruff check --quiet .
    .venv/bin/ruff format --check --quiet .
    .venv/bin/mypy
    # `./run_local.sh test tests/pipeline/test_x.py` runs that file; other arguments (-k, -x) the whole suite.
    where=tests
    for arg in "$@"; do [ -e "${arg%%::*}" ] && where=""; done
    # Worker processes (pytest-xdist): most of the suite's time is waiting (sockets, subprocesses,
    # Beam's start-up), so more workers than cores; TEST_WORKERS=0 runs in this one process.
    # `--dist loadgroup`: the tests sharing a module fixture stay together (tests/conftest.py).
    # Bytecode is written (the machine's PYTHONDONTWRITEBYTECODE would have each worker and each
    # CLI subprocess recompile the project and re-rewrite every test module's asserts).
    unset PYTHONDONTWRITEBYTECODE
    exec .venv/bin/python -m pytest -q -n "${TEST_WORKERS:-4}" --dist loadgroup $where "$@"
    ;;
  run)
    mkdir -p out
    exec .venv/bin/zitadel-beam migrate auth0 \
      --org=123456789 \
      --users=examples/auth0/users.json \
      --passwords=examples/auth0/passwords.json \
      --mfa=examples/auth0/mfa.json \
      --idp-map=google-oauth2=276402541098127105 \
      --metadata \
      --output=out/importBody.json \
      --dead-letter=out/dead-letter.ndjson \
      --batch-size=20
    ;;
  demo-push)
    mkdir -p out
    token_file=$(mktemp)
    trap 'rm -f "$token_file"; [ -n "${server_pid:-}" ] && kill "$server_pid" 2>/dev/null || true' EXIT
    head -c 24 /dev/urandom | base64 > "$token_file"
    port=$(.venv/bin/python -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
    .venv/bin/python tests/standins/zitadel_server.py --port "$port" --token-file "$token_file" --per-user-delay-ms 1 > out/demo-server.log 2>&1 &
    server_pid=$!
    for _ in $(seq 50); do grep -q http out/demo-server.log 2>/dev/null && break; sleep 0.1; done
    .venv/bin/zitadel-beam migrate auth0 \
      --org=123456789 \
      --users=examples/auth0/users.json \
      --passwords=examples/auth0/passwords.json \
      --output=out/demo/importBody.json \
      --batch-size=10 \
      --push-url="http://127.0.0.1:$port" --token-file="$token_file" --push-verify
    ;;
  *)
    echo "usage: ./run_local.sh [test [pytest args...] | demo-push]" >&2
    exit 2
    ;;
esac
