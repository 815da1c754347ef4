"""Failure injection A: a missing required field is a result the model can fix, not an exception.

The first line is the narrative and the control flag, in Chinese (``_common`` asks for it).  Production adds the
kind for programs: ``structuredContent.error = {kind: "invalid_input", missing: [...]}`` (second line).
"""

from _common import OPERATOR_TOKEN, desk

server = desk()
result = server.call_tool("incident.search", {}, OPERATOR_TOKEN, "acme")
seed = {key: value for key, value in result.to_dict().items() if key != "structuredContent"}
print(seed, "| is_error =", result.is_error)
print("production adds structuredContent:", result.structured_content)
