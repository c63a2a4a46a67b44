"""tests/standins/zitadel_server.py on its own, as the README runs it after `./run_local.sh`
(which installs no test extras): the server starts and answers with only the standard library
importable, and a request that needs a missing package gets a 500 naming it.

The server runs as a subprocess behind an import hook that refuses every module outside the
standard library and the stand-ins themselves (argon2, jwt, google.protobuf, bcrypt, ...).
"""

from __future__ import annotations

import json
import subprocess
import sys
import urllib.error
import urllib.request

import pytest
from repo_files import STANDINS, ZITADEL_TOOLS

PAT = "standalone-pat-0123456789"

# Run the server with nothing importable but the standard library and the stand-ins beside it.
WRAPPER = """
import importlib.abc, os, runpy, sys

standins = sys.argv[1]
own = {name[:-3] for name in os.listdir(standins) if name.endswith(".py")}


class OnlyTheStandardLibrary(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        top = name.split(".")[0]
        if top in sys.stdlib_module_names or top in own:
            return None
        raise ModuleNotFoundError(f"No module named {name!r} (blocked by the test)", name=name)


sys.meta_path.insert(0, OnlyTheStandardLibrary())
sys.path[:] = [standins] + [p for p in sys.path if "site-packages" not in p]
sys.argv = [os.path.join(standins, "zitadel_server.py"), *sys.argv[2:]]
runpy.run_path(sys.argv[0], run_name="__main__")
"""


@pytest.fixture
def standalone_server(tmp_path):
    token_file = tmp_path / "pat"
    token_file.write_text(PAT)
    proc = subprocess.Popen(
        [sys.executable, "-c", WRAPPER, str(STANDINS), "--port", "0", "--token-file", str(token_file)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        url = proc.stdout.readline().strip()
        if not url.startswith("http://"):
            proc.kill()
            pytest.fail(f"the server did not start: {url!r} {proc.communicate(timeout=10)[1]}")
        yield url, proc
    finally:
        if proc.poll() is None:
            proc.terminate()
            proc.wait(timeout=10)


def _post(url: str, body: bytes, headers: dict[str, str]) -> tuple[int, dict]:
    request = urllib.request.Request(url, data=body, headers=headers, method="POST")
    try:
        with urllib.request.urlopen(request, timeout=30) as answer:
            return answer.status, json.loads(answer.read())
    except urllib.error.HTTPError as err:
        return err.code, json.loads(err.read())


def test_imports_and_searches_with_the_standard_library_only(standalone_server):
    url, _ = standalone_server
    auth = {"Authorization": f"Bearer {PAT}", "Content-Type": "application/json"}
    body = (ZITADEL_TOOLS / "auth0/referenceOutput.json").read_bytes()  # bcrypt hashes
    status, answer = _post(url + "/admin/v1/import", body, auth)
    assert status == 200, answer
    assert answer["success"]["orgs"][0]["humanUserIds"]
    assert not answer.get("errors")
    status, answer = _post(url + "/admin/v1/events/_search", b'{"limit": 100}', auth)
    assert status == 200
    added = [e for e in answer["events"] if e["type"]["type"] == "user.human.added"]
    assert len(added) == len(json.loads(body)["dataOrgs"]["orgs"][0]["humanUsers"])


def test_a_request_that_needs_a_missing_package_names_it(standalone_server):
    url, proc = standalone_server
    form = b"grant_type=urn%3Aietf%3Aparams%3Aoauth%3Agrant-type%3Ajwt-bearer&assertion=x.y.z"
    status, answer = _post(
        url + "/oauth/v2/token", form, {"Content-Type": "application/x-www-form-urlencoded"}
    )
    assert status == 500
    assert "the JWT-profile token grant needs the Python package 'pyjwt'" in answer["message"]
    auth = {"Authorization": f"Bearer {PAT}", "Content-Type": "application/json"}
    status, answer = _post(url + "/v2/users/human", b'{"username": "a"}', auth)
    assert status == 500 and "'protobuf', which is not installed" in answer["message"]
    proc.terminate()
    _, err = proc.communicate(timeout=10)
    lines = [line for line in err.splitlines() if line.startswith("zitadel_server:")]
    assert len(lines) == 2 and "pip install 'pyjwt'" in lines[0]
    assert "Traceback" not in err
