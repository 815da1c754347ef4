"""The replicas' app (``replica_app.py``: the desk, ``survey``, ``nap``) plus what the at-rest secrets test
plants through: ``confide`` (a task that asks a free-text question and returns what it heard), ``boom``
(a tool whose exception quotes its argument) and ``share://{token}`` (a resource template whose variable
is a share token; any token reads).

``truecall serve tests/secrets_app.py:build --http`` with ``TRUECALL_DB`` naming the database.
"""

from __future__ import annotations

from typing import Any

from replica_app import build as build_replica_app
from truecall.incidents.app import READ, WRITE

SECRET_FORM = {"type": "object", "properties": {"words": {"type": "string", "title": "Words", "maxLength": 2000}},
               "required": ["words"]}


def build() -> Any:
    server = build_replica_app()

    @server.tool("confide", description="Accepts the work as a task, asks for words and returns them.",
                 input_schema={"type": "object", "properties": {}, "additionalProperties": False},
                 scopes={WRITE}, task_support="optional", forms=[("Say the words.", SECRET_FORM)])
    async def confide(ctx: Any) -> Any:
        await ctx.accept_as_task("accepted; a question follows")
        answer = await ctx.elicit("Say the words.", SECRET_FORM, key="words")
        return {"heard": answer.content["words"] if answer.accepted else None}

    @server.tool("boom", description="Fails unexpectedly with the given message.",
                 input_schema={"type": "object", "properties": {"message": {"type": "string"}},
                               "required": ["message"], "additionalProperties": False},
                 scopes={WRITE})
    def boom(message: str) -> Any:
        raise RuntimeError(message)

    @server.resource_template("share://{token}", name="share", scopes={READ}, mime_type="text/plain")
    def share(token: str) -> str:
        return "shared notes"

    return server
