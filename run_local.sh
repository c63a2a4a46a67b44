#!/usr/bin/env bash
# Set-up and entry point for local use and CI.
#   ./run_local.sh          create .venv, install, run the Auth0 sample migration, print the summary
#   ./run_local.sh test     same set-up (with test extras), then the whole test suite
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
[ "$mode" = test ] && want="[test]"
if [ ! -f "$stamp$want" ]; then
  .venv/bin/python -m pip install -q --disable-pip-version-check --upgrade pip >/dev/null
  .venv/bin/python -m pip install -q --disable-pip-version-check -e ".$want"
  touch "$stamp$want"
fi
case "$mode" in
  test)
    shift || true
    exec .venv/bin/python -m pytest -q tests "$@"
    ;;
  run)
    mkdir -p out
    exec .venv/bin/zitadel-beam migrate auth0 \
      --org=123456789 \
      --users=examples/auth0/users.json \
      --passwords=examples/auth0/passwords.json \
      --output=out/importBody.json \
      --dead-letter=out/dead-letter.ndjson \
      --batch-size=20
    ;;
  *)
    echo "usage: ./run_local.sh [test [pytest args...]]" >&2
    exit 2
    ;;
esac
