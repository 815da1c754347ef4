"""Interop: the official TypeScript SDK client (``@modelcontextprotocol/sdk``, installed with the
conformance suite by ``npm ci`` in conformance/) calls the desk's task-required ``incident.handle``
as a 2025-11-25 task over Streamable HTTP.

With invalid arguments the answer is still the ``CreateTaskResult`` the client asked for — a task
already finished with the ``invalid_input`` result — so the SDK's schema check passes and its
``tasks/result`` call returns the tool error (before: a plain ``CallToolResult``, which the SDK
refuses as an invalid ``CreateTaskResult``).
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any, Iterator

import pytest

from http_support import OPERATOR, served

from _paths import ROOT
NODE = ROOT / "conformance" / "node_modules" / ".bin" / "node"
SDK = ROOT / "conformance" / "node_modules" / "@modelcontextprotocol" / "sdk"
SCRIPT = ROOT / "tests" / "ts" / "task_client.mjs"


@pytest.fixture(scope="module")
def desk(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    assert NODE.exists() and SDK.exists(), "run `npm ci` in conformance/ (scripts/test does)"
    with served(tmp_path_factory.mktemp("ts-tasks")) as server:
        yield server


def ts_call(desk: Any, tool: str, arguments: Any, answer: dict[str, Any] | None = None,
            token: str = OPERATOR) -> dict[str, Any]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("npm_")}
    env["TS_SDK_DIR"] = str(SDK)
    if answer is not None:
        env["ELICIT_ANSWER"] = json.dumps(answer)
    done = subprocess.run([str(NODE), str(SCRIPT), desk.url, token, tool, json.dumps(arguments)],
                          capture_output=True, text=True, timeout=60, env=env, cwd=ROOT)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_invalid_arguments_to_a_task_tool_are_a_finished_task(desk: Any) -> None:
    out = ts_call(desk, "incident.handle", {"incidentId": 1001})
    assert out["protocolVersion"] == "2025-11-25", out
    kinds = [m["type"] for m in out["seen"]]
    # the SDK accepted the answer as a CreateTaskResult; the task is failed (2025-11-25: a tool
    # result with isError), which the SDK's stream reports as an error without the result ...
    assert kinds == ["taskCreated", "taskStatus", "error", "taskResult"], out
    assert out["seen"][1]["status"] == "failed"
    # ... and tasks/result gives the invalid_input result the plain call would have given
    result = out["seen"][-1]["result"]
    assert result["isError"] is True and result["structuredContent"]["error"]["kind"] == "invalid_input", result


def test_a_valid_task_call_still_runs_as_a_task(desk: Any) -> None:
    out = ts_call(desk, "incident.handle", {"incidentId": "INC-1001", "idempotencyKey": "ts-sdk-1"})
    kinds = [m["type"] for m in out["seen"]]
    assert kinds[0] == "taskCreated" and kinds[-2:] == ["result", "taskResult"], out
    for result in (out["seen"][-2]["result"], out["seen"][-1]["result"]):
        assert result.get("isError") is not True and result["structuredContent"]["notified"] is True, result


ASKING_APP = """
import os

import truecall

app = truecall.Server("asking-app", "1.0.0", db=os.environ["TRUECALL_TEST_APP_DB"])
app.local_principal = truecall.Principal("local@test", "local", frozenset())
FORM = {"type": "object", "properties": {"service": {"type": "string", "enum": ["payments", "checkout"]}},
        "required": ["service"]}


@app.tool("diagnose", description="Accepts the work, then asks which service.", task_support="required",
          forms=[("Which service should be diagnosed?", FORM)])
async def diagnose(ctx):
    await ctx.accept_as_task("accepted")
    answer = await ctx.elicit("Which service should be diagnosed?", FORM, key="service")
    return {"service": answer.content["service"] if answer.accepted else None}
"""


def test_a_task_that_asks_after_acceptance_reaches_the_ts_client(tmp_path: Path) -> None:
    """2025-11-25: the question travels on the tasks/result stream with the related task; the
    SDK's elicitation handler answers it; the task completes with that answer."""
    assert NODE.exists() and SDK.exists(), "run `npm ci` in conformance/ (scripts/test does)"
    (tmp_path / "asking_app.py").write_text(ASKING_APP)
    with served(tmp_path, str(tmp_path / "asking_app.py") + ":app",
                env={"TRUECALL_TEST_APP_DB": str(tmp_path / "app.db")}) as server:
        out = ts_call(server, "diagnose", {}, answer={"action": "accept", "content": {"service": "checkout"}},
                      token="")
    assert [a["message"] for a in out["asked"]] == ["Which service should be diagnosed?"], out
    assert out["asked"][0]["_meta"]["io.modelcontextprotocol/related-task"]["taskId"]
    kinds = [m["type"] for m in out["seen"]]
    assert kinds[0] == "taskCreated" and kinds[-1] == "taskResult", out
    assert out["seen"][-1]["result"]["structuredContent"] == {"service": "checkout"}, out
