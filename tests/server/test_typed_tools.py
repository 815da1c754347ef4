"""Tools written the way Python developers already do (issue 15): schemas from type hints,
registration errors that name the function and the parameter, return values made results."""

import dataclasses
import enum
import json
import logging
import subprocess
import sys
from typing import Annotated, Any, Literal, Optional, TypedDict, Union

import msgspec
import pytest

from truecall import (ErrorKind, FastMCP, Principal, RegistrationError, Server, StaticTokens, ToolContext, ToolError,
                      ToolResult, text, tool_error)

TOKEN = "tok-typed"
TOKENS = {TOKEN: Principal("dev@acme", "acme", frozenset({"read"}))}


@pytest.fixture
def server(tmp_path):
    s = Server("typed", tokens=StaticTokens.from_plain(TOKENS), db=tmp_path / "typed.db").start()
    yield s
    s.db.close()


def call(server: Server, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    return server.call_tool(name, arguments, TOKEN).to_dict()


def schema_of(server: Server, name: str) -> dict[str, Any]:
    return server.registry.tools[name].definition["inputSchema"]


# -- the failures the issue reports, one by one -------------------------------------------------------

def test_bare_decorator_registers_the_tool(server):
    @server.tool
    def add(a: int, b: int) -> int:
        """Add two numbers."""
        return a + b

    assert "add" in server.registry.tools
    assert call(server, "add", {"a": 2, "b": 3}) == {  # the text block is the value, as FastMCP writes it
        "content": [{"type": "text", "text": "5"}], "structuredContent": {"result": 5}}


def test_called_decorator_derives_the_schema_and_binds_no_context(server):
    @server.tool()
    def add(a: int, b: int) -> int:
        """Add two numbers."""
        return a + b

    assert schema_of(server, "add") == {
        "type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
        "required": ["a", "b"], "additionalProperties": False}
    assert server.registry.tools["add"].definition["outputSchema"] == {
        "type": "object", "properties": {"result": {"type": "integer"}}, "required": ["result"]}
    assert call(server, "add", {"a": 1, "b": 1})["structuredContent"] == {"result": 2}


def test_an_int_return_is_wrapped_and_checked_against_its_output_schema(server):
    @server.tool
    def lies(n: int) -> int:
        """Says it returns an int."""
        return "not an int" if n else 0  # type: ignore[return-value]

    assert call(server, "lies", {"n": 0})["structuredContent"] == {"result": 0}
    bad = call(server, "lies", {"n": 1})
    assert bad["isError"] is True and bad["structuredContent"]["error"]["kind"] == "internal"
    assert "output contract" in bad["content"][0]["text"]


def test_resource_name_defaults_to_the_function_and_description_to_the_docstring(server):
    @server.resource("memo://welcome")
    def welcome() -> str:
        """A welcome memo."""
        return "hello"

    res = server.registry.resources["memo://welcome"]
    assert res.definition == {"uri": "memo://welcome", "name": "welcome", "description": "A welcome memo."}
    principal = TOKENS[TOKEN]
    import asyncio

    assert asyncio.run(server.read_resource(principal, "memo://welcome")) == [{"uri": "memo://welcome",
                                                                             "text": "hello"}]


def test_typed_template_reader_gets_its_variables_by_name(server):
    @server.resource_template("memo://notes/{note}")
    def note(note: str, ctx: ToolContext) -> str:
        """One note."""
        return f"{note} for {ctx.tenant}"

    import asyncio

    assert asyncio.run(server.read_resource(TOKENS[TOKEN], "memo://notes/x")) == [
        {"uri": "memo://notes/x", "text": "x for acme"}]


def test_prompt_returning_a_string_is_one_user_message_and_its_arguments_come_from_the_signature(server):
    @server.prompt
    def greet(who: str, tone: Annotated[str, "How warm"] = "warm") -> str:
        """Greet somebody.

        Args:
            who: The person to greet.
        """
        return f"Say hello to {who}, {tone}."

    prompt = server.registry.prompts["greet"]
    assert prompt.definition == {"name": "greet", "description": "Greet somebody.", "arguments": [
        {"name": "who", "description": "The person to greet.", "required": True},
        {"name": "tone", "description": "How warm"}]}
    import asyncio

    got = asyncio.run(server.get_prompt(TOKENS[TOKEN], "greet", {"who": "Ada"}))
    assert got == {"description": "Greet somebody.",
                   "messages": [{"role": "user", "content": {"type": "text", "text": "Say hello to Ada, warm."}}]}


# -- the context: by annotation, and the style before hints -------------------------------------------

def test_context_is_found_by_annotation_anywhere_and_not_given_to_who_does_not_ask(server):
    seen: dict[str, Any] = {}

    @server.tool
    def late(service: str, context: ToolContext) -> str:
        """Context last."""
        seen["late"] = context
        return service

    @server.tool
    def none(service: str) -> str:
        """No context."""
        return service

    assert call(server, "late", {"service": "x"}) == {"content": [{"type": "text", "text": "x"}],
                                                      "structuredContent": {"result": "x"}}
    assert isinstance(seen["late"], ToolContext) and seen["late"].tenant == "acme"
    assert "context" not in schema_of(server, "late")["properties"]
    assert call(server, "none", {"service": "y"})["content"][0]["text"] == "y"


def test_an_unannotated_first_ctx_is_the_context_and_an_annotated_one_is_an_argument(server):
    @server.tool("legacy", description="old style")
    def legacy(ctx, service: str) -> ToolResult:
        return ToolResult([text(f"{type(ctx).__name__}:{service}")])

    @server.tool("any_ctx", description="old style, Any")
    def any_ctx(ctx: Any) -> ToolResult:
        return ToolResult([text(type(ctx).__name__)])

    @server.tool
    def named(ctx: str) -> str:
        """A parameter that happens to be called ctx."""
        return ctx.upper()

    assert call(server, "legacy", {"service": "p"})["content"][0]["text"] == "ToolContext:p"
    assert schema_of(server, "legacy")["properties"] == {"service": {"type": "string"}}
    assert call(server, "any_ctx", {})["content"][0]["text"] == "ToolContext"
    assert schema_of(server, "named")["properties"] == {"ctx": {"type": "string"}}
    assert call(server, "named", {"ctx": "abc"})["content"][0]["text"] == "ABC"


# -- registration errors: each names the function and the parameter -----------------------------------

class Opaque:
    pass


def _fails(server: Server, fn: Any, *needles: str, **options: Any) -> str:
    with pytest.raises(RegistrationError) as info:
        server.tool(**options)(fn)
    message = str(info.value)
    for needle in needles:
        assert needle in message, message
    return message


def test_registration_errors_name_the_function_and_the_parameter(server):
    def unsupported(thing: Opaque) -> str:
        """x"""
        return ""

    def star(*items: int) -> str:
        """x"""
        return ""

    def two(a: ToolContext, b: ToolContext) -> str:
        """x"""
        return ""

    def positional(a: int, /) -> str:
        """x"""
        return ""

    def undocumented(a: int) -> int:
        return a

    def unresolved(a: "NoSuchType") -> str:  # noqa: F821
        """x"""
        return ""

    def result_param(a: ToolResult) -> str:
        """x"""
        return ""

    def bad_return(a: int) -> Opaque:
        """x"""
        return Opaque()

    def bad_constraint(a: Annotated[int, msgspec.Meta(min_length=2)]) -> int:
        """x"""
        return a

    _fails(server, unsupported, "unsupported", "'thing'", "Opaque")
    _fails(server, star, "star", "'items'")
    _fails(server, two, "two", "'b'", "context")
    _fails(server, positional, "positional", "'a'")
    _fails(server, undocumented, "undocumented", "description")
    _fails(server, unresolved, "unresolved", "'a'", "NoSuchType")
    _fails(server, result_param, "result_param", "'a'")
    # A plain class as the return type registers since issue 26 (no schema; its attributes as JSON
    # text, as the SDK's MCPServer serves it): tests/server/test_dropin.py::test_a_plain_class_as_the_return_type
    assert FastMCP("plain").tool(bad_return).output_schema is None
    _fails(server, bad_constraint, "bad_constraint", "'a'")
    with pytest.raises(RegistrationError, match="not callable"):
        server.tool()(42)  # type: ignore[arg-type]
    assert server.registry.tools == {}


def test_two_tools_with_one_name_fail_at_registration(server):
    @server.tool
    def dup(a: int) -> int:
        """first"""
        return a

    def dup2(a: int) -> int:
        """second"""
        return a

    _fails(server, dup2, "dup2", "'dup'", "already registered", name="dup")


def test_resource_and_prompt_registration_errors(server):
    with pytest.raises(RegistrationError, match="needs a URI"):
        server.resource(lambda: "x")  # type: ignore[arg-type]
    with pytest.raises(RegistrationError, match=r"\{id\}"):
        @server.resource_template("memo://{id}")
        def wrong(name: str) -> str:
            """x"""
            return name
    with pytest.raises(RegistrationError, match="'extra'"):
        @server.resource("memo://x")
        def extra(extra: str) -> str:
            """x"""
            return extra
    with pytest.raises(RegistrationError, match="'n'"):
        @server.prompt
        def counted(n: int) -> str:
            """x"""
            return str(n)


# -- input schemas from signatures ---------------------------------------------------------------------

class Color(enum.Enum):
    RED = "red"
    BLUE = "blue"


class Address(TypedDict):
    street: str
    city: str


@dataclasses.dataclass
class Point:
    x: float
    y: float = 0.0


def test_schemas_for_the_usual_types(server):
    @server.tool
    def everything(
        s: str, i: int, f: float, b: bool, nothing: None,
        maybe: Optional[int], pipe: str | None, either: Union[int, str],
        mode: Literal["fast", "slow"], color: Color,
        tags: list[str], counts: dict[str, int], pair: tuple[int, str],
        address: Address, point: Point,
        short: Annotated[str, msgspec.Meta(min_length=1, max_length=8, pattern="^[a-z]+$")],
        ranged: Annotated[int, msgspec.Meta(ge=1, le=10, description="One to ten")],
        described: Annotated[str, "Just a description"],
        limit: int = 10,
    ) -> str:
        """Take everything."""
        return "ok"

    schema = schema_of(server, "everything")
    p = schema["properties"]
    assert p["s"] == {"type": "string"} and p["i"] == {"type": "integer"} and p["f"] == {"type": "number"}
    assert p["b"] == {"type": "boolean"} and p["nothing"] == {"type": "null"}
    assert p["maybe"] == {"anyOf": [{"type": "integer"}, {"type": "null"}]}
    assert p["pipe"] == {"anyOf": [{"type": "string"}, {"type": "null"}]}
    assert p["either"] == {"anyOf": [{"type": "integer"}, {"type": "string"}]}
    assert p["mode"] == {"enum": ["fast", "slow"], "type": "string"}
    assert p["color"] == {"$ref": "#/$defs/Color"} and schema["$defs"]["Color"]["enum"] == ["red", "blue"]
    assert schema["$defs"]["Color"]["type"] == "string"
    assert p["tags"] == {"type": "array", "items": {"type": "string"}}
    assert p["counts"] == {"type": "object", "additionalProperties": {"type": "integer"}}
    assert p["pair"]["prefixItems"] == [{"type": "integer"}, {"type": "string"}] and p["pair"]["maxItems"] == 2
    assert schema["$defs"]["Address"]["properties"] == {"street": {"type": "string"}, "city": {"type": "string"}}
    assert schema["$defs"]["Address"]["required"] == ["street", "city"]
    assert schema["$defs"]["Point"]["required"] == ["x"]
    assert p["short"] == {"type": "string", "minLength": 1, "maxLength": 8, "pattern": "^[a-z]+$"}
    assert p["ranged"] == {"type": "integer", "minimum": 1, "maximum": 10, "description": "One to ten"}
    assert p["described"] == {"type": "string", "description": "Just a description"}
    assert p["limit"] == {"type": "integer", "default": 10}
    assert "limit" not in schema["required"] and "s" in schema["required"]
    assert list(p) == ["s", "i", "f", "b", "nothing", "maybe", "pipe", "either", "mode", "color", "tags", "counts",
                       "pair", "address", "point", "short", "ranged", "described", "limit"]


def test_pydantic_and_annotated_types_constraints_translate():
    pydantic = pytest.importorskip("pydantic")
    annotated_types = pytest.importorskip("annotated_types")
    s = Server("c", db=":memory:")

    @s.tool
    def constrained(a: Annotated[int, pydantic.Field(ge=1, description="A")],
                    b: Annotated[str, annotated_types.MaxLen(3)],
                    c: Annotated[str, pydantic.Field(pattern="^x")]) -> str:
        """x"""
        return "ok"

    p = s.registry.tools["constrained"].definition["inputSchema"]["properties"]
    assert p["a"] == {"type": "integer", "minimum": 1, "description": "A"}
    assert p["b"] == {"type": "string", "maxLength": 3}
    assert p["c"] == {"type": "string", "pattern": "^x"}


@pytest.mark.parametrize("doc", [
    """Search incidents.

    Args:
        service: The service name.
        limit (int): At most this many.
    """,
    """Search incidents.

    Parameters
    ----------
    service : str
        The service name.
    limit : int
        At most this many.
    """,
    """Search incidents.

    :param service: The service name.
    :param limit: At most this many.
    """,
], ids=["google", "numpy", "rest"])
def test_docstring_parameter_descriptions(server, doc):
    def search(service: str, limit: int = 5) -> str:
        return service

    search.__doc__ = doc
    server.tool(search)
    d = server.registry.tools["search"].definition
    assert d["description"] == "Search incidents."
    assert d["inputSchema"]["properties"]["service"]["description"] == "The service name."
    assert d["inputSchema"]["properties"]["limit"] == {"type": "integer", "description": "At most this many.",
                                                       "default": 5}


def test_explicit_input_schema_wins(server):
    explicit = {"type": "object", "properties": {"q": {"type": "string", "maxLength": 3}}, "required": ["q"]}

    @server.tool(input_schema=explicit)
    def find(q: str) -> str:
        """Find."""
        return q

    assert schema_of(server, "find") == explicit
    assert call(server, "find", {"q": "toolong"})["isError"] is True


def test_derived_schema_is_enforced_and_names_the_field(server):
    @server.tool
    def pick(mode: Literal["a", "b"], n: Annotated[int, msgspec.Meta(ge=0)] = 0) -> str:
        """Pick."""
        return mode

    wrong = call(server, "pick", {"mode": "c"})
    assert wrong["isError"] is True and wrong["structuredContent"]["error"]["field"] == "mode"
    low = call(server, "pick", {"mode": "a", "n": -1})
    assert low["structuredContent"]["error"]["field"] == "n"
    extra = call(server, "pick", {"mode": "a", "typo": 1})
    # the caller's own key is not quoted back (it may be a secret pasted in the wrong place); the fields the
    # tool takes are named instead
    said = extra["content"][0]["text"]
    assert extra["isError"] is True and "typo" not in said and "[undeclared]" in said and "mode, n" in said


def test_typed_values_arrive_as_python_objects(server):
    got: dict[str, Any] = {}

    @server.tool
    def shapes(color: Color, point: Point, pair: tuple[int, str], ratio: float,
               address: Optional[Address] = None) -> str:
        """Shapes."""
        got.update(color=color, point=point, pair=pair, ratio=ratio, address=address)
        return "ok"

    assert call(server, "shapes", {"color": "blue", "point": {"x": 1}, "pair": [1, "a"], "ratio": 2,
                                   "address": {"street": "s", "city": "c"}})["content"][0]["text"] == "ok"
    assert got["color"] is Color.BLUE and got["point"] == Point(1.0, 0.0) and got["pair"] == (1, "a")
    assert type(got["ratio"]) is float and got["address"] == {"street": "s", "city": "c"}


def test_pydantic_model_parameter_and_return():
    pydantic = pytest.importorskip("pydantic")

    class Query(pydantic.BaseModel):
        service: str
        limit: int = 5

    class Answer(pydantic.BaseModel):
        service: str
        count: int

    s = Server("p", db=":memory:", tokens=StaticTokens.from_plain(TOKENS)).start()

    @s.tool
    def ask(query: Query) -> Answer:
        """Ask."""
        assert isinstance(query, Query)
        return Answer(service=query.service, count=query.limit)

    d = s.registry.tools["ask"].definition
    query = d["inputSchema"]["properties"]["query"]
    assert query["type"] == "object" and query["required"] == ["service"]
    assert query["properties"]["limit"]["default"] == 5
    assert d["outputSchema"]["required"] == ["service", "count"]
    assert s.call_tool("ask", {"query": {"service": "p"}}, TOKEN).structured_content == {"service": "p", "count": 5}


# -- return values ---------------------------------------------------------------------------------------

class Count(TypedDict):
    service: str
    count: int


def test_structured_returns_give_output_schema_and_structured_content(server):
    @server.tool
    def counted(service: str) -> Count:
        """Count."""
        return {"service": service, "count": 2}

    @server.tool
    def located(x: float) -> Point:
        """Locate."""
        return Point(x, 1.5)

    @server.tool
    def mapping(n: int) -> dict[str, int]:
        """Map."""
        return {"n": n}

    d = server.registry.tools["counted"].definition
    assert d["outputSchema"]["properties"] == {"service": {"type": "string"}, "count": {"type": "integer"}}
    assert call(server, "counted", {"service": "p"}) == {
        "content": [{"type": "text", "text": '{"service":"p","count":2}'}],
        "structuredContent": {"service": "p", "count": 2}}
    assert call(server, "located", {"x": 1})["structuredContent"] == {"x": 1.0, "y": 1.5}
    assert server.registry.tools["located"].definition["outputSchema"]["type"] == "object"
    assert server.registry.tools["mapping"].definition["outputSchema"] == {
        "type": "object", "additionalProperties": {"type": "integer"}}
    assert call(server, "mapping", {"n": 3})["structuredContent"] == {"n": 3}


def test_list_str_none_and_tool_result_returns(server):
    @server.tool
    def listed(n: int) -> list[str]:
        """List."""
        return ["a"] * n

    @server.tool
    def nothing() -> None:
        """Nothing."""

    @server.tool
    def maybe_error(fail: bool) -> Count:
        """Either a count or a typed error."""
        if fail:
            return tool_error(ErrorKind.DEPENDENCY_UNAVAILABLE, "down")  # type: ignore[return-value]
        return {"service": "s", "count": 0}

    assert server.registry.tools["listed"].definition["outputSchema"]["properties"]["result"] == {
        "type": "array", "items": {"type": "string"}}
    assert call(server, "listed", {"n": 2})["structuredContent"] == {"result": ["a", "a"]}
    assert call(server, "nothing", {}) == {"content": []}
    assert "outputSchema" not in server.registry.tools["nothing"].definition
    assert call(server, "maybe_error", {"fail": True})["structuredContent"]["error"]["kind"] == \
        "dependency_unavailable"
    broken = call(server, "maybe_error", {"fail": False})
    assert broken["structuredContent"] == {"service": "s", "count": 0}


def test_typed_dict_return_breaking_its_contract_is_withheld(server):
    @server.tool
    def wrong() -> Count:
        """Wrong."""
        return {"service": "s"}  # type: ignore[typeddict-item]

    out = call(server, "wrong", {})
    assert out["isError"] is True and out["structuredContent"]["error"]["kind"] == "internal"


# -- errors ---------------------------------------------------------------------------------------------

def test_tool_error_becomes_a_result_of_its_kind_with_its_facts(server):
    @server.tool
    def ticket(ref: str) -> str:
        """Ticket."""
        if ref == "gone":
            raise ToolError("no such ticket", ticket=ref)
        raise ToolError("the queue did not answer", kind="outcome_unknown", reference="job-7")

    gone = call(server, "ticket", {"ref": "gone"})
    assert gone == {"content": [{"type": "text", "text": "no such ticket"}], "isError": True,
                    "structuredContent": {"error": {"kind": "invalid_input", "message": "no such ticket",
                                                    "retryable": False, "ticket": "gone"}}}
    unknown = call(server, "ticket", {"ref": "x"})["structuredContent"]["error"]
    assert unknown["kind"] == "outcome_unknown" and unknown["reference"] == "job-7"
    rows = server.events.query(kind="tool.called", tool="ticket")
    assert sorted(r.outcome for r in rows) == ["invalid_input", "outcome_unknown"]


def test_unexpected_exception_is_internal_and_its_redacted_traceback_is_logged(server, caplog):
    @server.tool
    def explode(n: int) -> int:
        """Explode."""
        raise RuntimeError("password=hunter2 and the rest")

    with caplog.at_level(logging.ERROR, logger="truecall.server.tools"):
        out = call(server, "explode", {"n": 1})
    assert out["structuredContent"]["error"]["kind"] == "internal"
    assert "hunter2" not in json.dumps(out)
    logged = "\n".join(r.getMessage() for r in caplog.records)
    assert "Traceback" in logged and "explode" in logged and "RuntimeError" in logged
    assert "hunter2" not in logged


# -- cost -----------------------------------------------------------------------------------------------

def test_import_truecall_loads_no_schema_library_and_typed_tools_no_pydantic():
    code = ("import sys, truecall\n"
            "before = {m for m in ('msgspec', 'pydantic', 'docstring_parser') if m in sys.modules}\n"
            "s = truecall.Server('x', db=':memory:')\n"
            "@s.tool\n"
            "def add(a: int, b: int = 1) -> int:\n"
            "    '''Add.\n\n    Args:\n        a: first\n    '''\n"
            "    return a + b\n"
            "print(sorted(before), 'pydantic' in sys.modules)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.split() == ["[]", "False"]


def test_pydantic_models_inside_other_types():
    pydantic = pytest.importorskip("pydantic")

    class Item(pydantic.BaseModel):
        name: str
        qty: int = 1

    s = Server("p2", db=":memory:", tokens=StaticTokens.from_plain(TOKENS)).start()

    @s.tool
    def restock(items: list[Item], note: Optional[Item] = None) -> list[Item]:
        """Restock."""
        assert all(isinstance(i, Item) for i in items) and (note is None or isinstance(note, Item))
        return [Item(name=i.name, qty=i.qty * 2) for i in items]

    d = s.registry.tools["restock"].definition
    assert d["inputSchema"]["properties"]["items"]["type"] == "array"
    assert d["inputSchema"]["$defs"]["Item"]["required"] == ["name"]
    out = s.call_tool("restock", {"items": [{"name": "a", "qty": 2}], "note": {"name": "n"}}, TOKEN)
    assert out.structured_content == {"result": [{"name": "a", "qty": 4}]}
    bad = s.call_tool("restock", {"items": [{"qty": 2}]}, TOKEN)
    assert bad.is_error is True and bad.error["kind"] == "invalid_input"


def test_unresolvable_annotations_matter_only_where_a_schema_is_derived(server):
    # Code from before type hints were read: explicit schemas, annotations naming things the
    # module never imported (a string annotation evaluated only now).
    @server.tool("old", description="old style", input_schema={"type": "object", "properties": {"n": {}}})
    def old(ctx: "ToolContext", n: "NotImported" = None) -> "ToolResult":  # noqa: F821
        return ToolResult([text(f"{type(ctx).__name__}:{n}")])

    assert call(server, "old", {"n": 3})["content"][0]["text"] == "ToolContext:3"

    def derived(n: "NotImported") -> int:  # noqa: F821
        """Needs the type for its schema."""
        return 1

    _fails(server, derived, "'n'", "NotImported", "does not resolve")

    def bad_return(n: int) -> "NotImported":  # noqa: F821
        """Needs the type for its result."""
        return 1

    _fails(server, bad_return, "return", "NotImported")


@dataclasses.dataclass
class _Book:
    title: str
    year: int


class _Shelf(TypedDict):
    books: list[_Book]
    owner: str


class _Plain(TypedDict):
    names: list[str]
    counts: dict[str, int]


def test_a_typed_dict_return_holding_dataclasses_is_converted_not_withheld(server):
    @server.tool
    def shelf() -> _Shelf:
        """Books on a shelf."""
        return {"books": [_Book("Dune", 1965)], "owner": "me"}

    @server.tool
    def plain() -> _Plain:
        """Already JSON."""
        return {"names": ["a"], "counts": {"a": 1}}

    out = call(server, "shelf", {})
    assert not out.get("isError"), out
    assert out["structuredContent"] == {"books": [{"title": "Dune", "year": 1965}], "owner": "me"}
    assert json.loads(out["content"][0]["text"]) == out["structuredContent"]
    assert call(server, "plain", {})["structuredContent"] == {"names": ["a"], "counts": {"a": 1}}
