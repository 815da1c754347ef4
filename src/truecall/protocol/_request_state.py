"""Stateless multi round-trip requests (2026-07-28): ``input_required`` results and their sealed
``requestState``.

A tool that asks the client something ends the round with an ``input_required`` result; the
client retries with ``inputResponses`` and the ``requestState`` of that round.  The state is
sealed (:mod:`.sealing`) and bound to the caller, the method, the name and the arguments, and
each one is accepted once (its id goes into ``used_request_states``).  It carries the answers
the tool already used and a digest of every question asked, so that only an answer to a
question this server asked, in the same words, counts.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

from ..server.context import InputRequired, QuestionChanged
from ..errors import InvalidParams
from ..storage import Storage, in_thread, off_loop_result, unavailable
from ._sealing import InvalidRequestState, Sealer, digest

if TYPE_CHECKING:
    from ._request_context import RequestContext

__all__ = ["RequestStates", "answer_for", "USED_STATE_MIGRATIONS"]

USED_STATE_MIGRATIONS = [
    ("request-state-1", "CREATE TABLE used_request_states (jti TEXT PRIMARY KEY, expires_at REAL NOT NULL)"),
]


def answer_for(ctx: RequestContext, method: str, params: dict[str, Any], key: str) -> dict[str, Any]:
    """The client's answer to the question ``key`` of this request, or :class:`InputRequired`.

    An answer counts only for a question this server asked, in these words, in the round whose
    sealed state came back: volunteered answers (no state, a key never asked, a question that
    changed since) are not consent, and the question is asked (again).
    """
    request: dict[str, Any] = {"method": method}
    if params:
        request["params"] = params
    answer = None
    asked = ctx.asked.get(key)
    if asked == digest(request):
        answer = ctx.prior_responses.get(key)  # sealed: a retry cannot change an earlier answer
        if answer is None:
            answer = ctx.input_responses.get(key)
    elif asked is not None and key in ctx.input_responses:
        # The client answered the question asked under ``key`` and the tool now asks it in other words.
        # Once, the world may have changed (the severity it shows, say): asked again.  Twice running,
        # the question changes every round (a random id in its URL): asking again would only repeat
        # this until the client gives up.  Either way the answer does not count.
        if key in ctx.changed:
            raise QuestionChanged(key, method)
        if ctx.changing is None:
            ctx.changing = set()
        ctx.changing.add(key)
    if answer is not None and not isinstance(answer, dict):
        raise InvalidParams(f"inputResponses[{key!r}] must be an object")
    if answer is not None:
        ctx.consumed[key] = answer
        return answer
    raise InputRequired({key: request})


class RequestStates:
    """Opens the ``requestState`` of a retry and seals the next one."""

    def __init__(self, db: Storage, sealer: Sealer, result_meta: dict[str, Any]) -> None:
        self.db = db
        self.sealer = sealer
        #: The ``_meta`` every result carries (the server's name), interim ones too.
        self.result_meta = result_meta

    def migrate(self) -> None:
        self.db.migrate(USED_STATE_MIGRATIONS)

    def _binding(self, ctx: RequestContext, method: str, name: str, arguments: Any) -> dict[str, Any]:
        return {"sub": ctx.principal.subject, "ten": ctx.principal.tenant, "m": method, "n": name,
                "h": digest(arguments)}

    def open(self, ctx: RequestContext, method: str, name: str, arguments: Any) -> dict[str, Any] | None:
        """Check ``requestState``/``inputResponses`` of a retry and load earlier answers: the state's body,
        to be used up (:meth:`use`) before the request goes on, or ``None`` when it carries no state."""
        params = ctx.params
        responses = params.get("inputResponses")
        if responses is not None and not isinstance(responses, dict):
            raise InvalidParams("inputResponses must be an object")
        ctx.input_responses = responses or {}
        token = params.get("requestState")
        if token is None:
            return None
        body = self.sealer.open(token, self._binding(ctx, method, name, arguments))
        prior, asked, changed = body.get("r"), body.get("q"), body.get("c")
        ctx.prior_responses = prior if isinstance(prior, dict) else {}
        ctx.asked = asked if isinstance(asked, dict) else {}
        ctx.changed = frozenset(changed) if isinstance(changed, list) else frozenset()
        return body

    async def use(self, body: dict[str, Any]) -> None:
        """Accept an opened state once: its id goes into ``used_request_states`` (off the event loop on a
        server database: see ``storage.off_loop``); a second use is an invalid state."""
        try:
            await off_loop_result(self.db, self.db.execute, "INSERT INTO used_request_states VALUES (?, ?)",
                                  (body.get("jti"), body.get("exp", 0)))
        except Exception as exc:
            if unavailable(exc) is not None:
                raise  # the database failed, not the client's state: an internal error, never "invalid state"
            raise InvalidRequestState() from None

    def input_required(self, ctx: RequestContext, need: InputRequired) -> dict[str, Any]:
        """The ``input_required`` result that ends this round, with the state of the next one."""
        name = ctx.params.get("name") or ctx.params.get("uri") or ""
        answered = ctx.consumed
        # The questions this state answers: the ones asked now, and those whose answers it carries.
        asked = {key: ctx.asked[key] for key in answered if key in ctx.asked}
        asked.update((key, digest(request)) for key, request in need.requests.items())
        body = {**self._binding(ctx, str(ctx.method), str(name), ctx.params.get("arguments") or {}),
                "r": answered, "q": asked}
        if ctx.changing:
            body["c"] = sorted(ctx.changing)
        state = self.sealer.seal(body)
        self._sweep()  # housekeeping: the answer does not depend on it
        return {"resultType": "input_required", "inputRequests": need.requests, "requestState": state,
                "_meta": self.result_meta}  # every result names the server, interim ones too

    def _sweep(self) -> None:
        """Forget used states that expired: off the event loop on a server database, and not waited for."""
        sql, args = "DELETE FROM used_request_states WHERE expires_at < ?", (time.time(),)
        if not self.db.pooled:
            try:
                self.db.execute(sql, args)
            except Exception:  # noqa: BLE001 - the next round sweeps
                pass
            return
        in_thread(self.db, self.db.execute, sql, args).add_done_callback(lambda done: done.exception())
