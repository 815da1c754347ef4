"""Failure injection A: a missing required field is a result the model can fix, not an exception."""

from _common import OPERATOR_TOKEN, desk

server = desk()
result = server.call_tool("incident.search", {}, OPERATOR_TOKEN, "acme")
print(result.to_dict(), "| is_error =", result.is_error)
