"""Chapter 04's line: one fact, told twice (narrative and structured)."""

from _common import OPERATOR_TOKEN, desk

server = desk()
result = server.call_tool("incident.search", {"service": "payments"}, OPERATOR_TOKEN, "acme")
print(result.to_dict())
