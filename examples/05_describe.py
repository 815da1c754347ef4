"""describe() on injection A's result: what the user is told must start with 「未成功」 ("Not successful").

The first line is in Chinese (``_common`` sets ``TRUECALL_LANG=zh``), the second in English.
"""

from truecall import describe

from _common import OPERATOR_TOKEN, desk

server = desk()
result = server.call_tool("incident.search", {}, OPERATOR_TOKEN, "acme")
print(describe(result))
print(describe(result, locale="en"))
ok = server.call_tool("incident.search", {"service": "payments"}, OPERATOR_TOKEN, "acme")
print(describe(ok))
none = server.call_tool("incident.search", {"service": "search"}, OPERATOR_TOKEN, "acme")
print(describe(none))
