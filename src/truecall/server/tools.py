"""Tool, resource and prompt definitions, compiled once at registration.

Registration does all the reflection and schema compilation; the call path only
reads precomputed attributes.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Awaitable, Callable, Iterator, Mapping

from . import _typed
from ._typed import RegistrationError, Signature
from ..schema import EMPTY_OBJECT_SCHEMA, SchemaError, Validator

if TYPE_CHECKING:
    from ..results import ToolResult
    from ..tasks.task_store import Task

__all__ = [
    "Tool",
    "Resource",
    "ResourceTemplate",
    "Prompt",
    "Registry",
    "TOOL_NAME",
]

#: The spec's tool-name rule (2025-11-25): 1-128 chars of A-Z a-z 0-9 _ - .
TOOL_NAME = re.compile(r"^[A-Za-z0-9_.\-]{1,128}$")

Handler = Callable[..., Any]


def _property_names(schema: Any, depth: int = 0) -> set[str]:
    """Every property name a schema declares, at any depth (for safe audit paths)."""
    names: set[str] = set()
    if depth > 16:
        return names
    if isinstance(schema, dict):
        props = schema.get("properties")
        if isinstance(props, dict):
            names.update(str(k) for k in props)
        for value in schema.values():
            names |= _property_names(value, depth + 1)
    elif isinstance(schema, list):
        for item in schema:
            names |= _property_names(item, depth + 1)
    return names


def _invoker(fn: Handler, sig: Signature, accepts: frozenset[str] | None,
             converters: Mapping[str, Callable[[Any], Any]]) -> Callable[[Any, dict[str, Any]], Any]:
    """``invoke(ctx, arguments)`` for one handler, built once: the call does only what this
    signature needs (filter undeclared names, convert the few typed values, pass the context)."""
    name, positional = sig.context, sig.positional_context
    fills = sig.fills

    def prepare(arguments: dict[str, Any]) -> dict[str, Any]:
        if accepts is not None:
            arguments = {k: v for k, v in arguments.items() if k in accepts}
        if converters:
            arguments = {k: (converters[k](v) if k in converters else v) for k, v in arguments.items()}
        if fills:  # pydantic Field defaults, which Python does not apply itself
            arguments = {**{k: make() for k, make in fills.items() if k not in arguments}, **arguments}
        return arguments

    as_given = accepts is None and not converters and not fills  # nothing to prepare
    if name is None:
        if as_given:
            return lambda ctx, arguments: fn(**arguments)
        return lambda ctx, arguments: fn(**prepare(arguments))
    if positional:
        if as_given:
            return lambda ctx, arguments: fn(ctx, **arguments)
        return lambda ctx, arguments: fn(ctx, **prepare(arguments))
    return lambda ctx, arguments: fn(**prepare(arguments), **{name: ctx})


@dataclass(eq=False)
class Tool:
    """A callable tool: its wire definition plus compiled validators."""

    name: str
    handler: Handler
    description: str
    input_schema: dict[str, Any] = field(default_factory=lambda: dict(EMPTY_OBJECT_SCHEMA))
    output_schema: dict[str, Any] | None = None
    title: str | None = None
    annotations: dict[str, Any] | None = None
    scopes: frozenset[str] = frozenset()
    task_support: str = "forbidden"  # forbidden | optional | required
    meta: dict[str, Any] | None = None
    #: return value → :class:`ToolResult` (``None``: the general rule, ``truecall.server._typed.as_result``)
    returns: Callable[[Any], Any] | None = None
    #: per-parameter conversions of validated JSON values (dataclasses, enums, tuples, models…)
    converters: Mapping[str, Callable[[Any], Any]] = field(default_factory=dict)
    #: the handler's reflected signature (read here when not given)
    signature: Signature | None = field(default=None, repr=False)
    #: ``fn(task) -> ToolResult | None``: what is true of a task of this tool whose process died
    #: (``None``: unknown, the task ends ``outcome_unknown``); see the tasks guide
    recover: "Callable[[Task], ToolResult | None] | None" = field(default=None, repr=False)

    @classmethod
    def from_function(cls, fn: Handler, name: str | None = None, *, description: str | None = None,
                      input_schema: dict[str, Any] | None = None, output_schema: dict[str, Any] | None = None,
                      open_input: bool = False, **options: Any) -> "Tool":
        """A tool from a plain function: schemas from its hints unless given, description from its
        docstring unless given.  Anything that cannot become a tool raises
        :class:`RegistrationError` naming the function (and the parameter).  ``open_input``: a
        derived ``inputSchema`` admits arguments the function does not take (they are dropped)."""
        sig = _typed.read_signature(fn, "tool", name)
        desc = description or sig.description
        if not desc:
            raise sig.fail("needs a description: write a docstring or pass description=")
        plan = _typed.derive_input(sig, input_schema, open_input)
        out_schema, returns = _typed.derive_output(sig, output_schema)
        try:
            return cls(name=name or str(getattr(fn, "__name__", "")), handler=fn, description=desc,
                       input_schema=plan.schema, output_schema=out_schema, returns=returns,
                       converters=plan.converters, signature=sig, **options)
        except (SchemaError, ValueError) as exc:
            if isinstance(exc, RegistrationError):
                raise
            raise RegistrationError(f"{sig.label}: {exc}") from None

    def __post_init__(self) -> None:
        if not TOOL_NAME.match(self.name):
            raise ValueError(f"invalid tool name {self.name!r}: 1-128 of A-Z a-z 0-9 _ - .")
        if self.input_schema.get("type") != "object":
            raise SchemaError(f"tool {self.name}: inputSchema must have type 'object'")
        if self.output_schema is not None and self.output_schema.get("type") != "object":
            raise SchemaError(f"tool {self.name}: outputSchema must have type 'object'")
        if self.task_support not in ("forbidden", "optional", "required"):
            raise ValueError("task_support is forbidden, optional or required")
        self.input_validator = Validator(self.input_schema)
        self.declared_fields = frozenset(_property_names(self.input_schema))
        #: (argument, header suffix) of the arguments a 2026-07-28 client repeats in ``Mcp-Param-*``
        #: headers (their ``x-mcp-header``): known with the schema, so nobody caches it on the tool later
        self.header_params: tuple[tuple[str, str], ...] = tuple(
            (name, spec["x-mcp-header"]) for name, spec in (self.input_schema.get("properties") or {}).items()
            if isinstance(spec, dict) and isinstance(spec.get("x-mcp-header"), str))
        self.output_validator = Validator(self.output_schema) if self.output_schema is not None else None
        sig = self.signature or _typed.read_signature(self.handler, "tool", self.name)
        self.is_async = sig.is_async
        derived_closed = self.input_schema.get("additionalProperties") is False and \
            set(self.input_schema.get("properties", ())) <= sig.names()
        #: keyword names the handler takes (None: pass every argument, the schema admits no others)
        self.accepts: frozenset[str] | None = None if (sig.var_keyword or derived_closed) else sig.names()
        self.invoke = _invoker(self.handler, sig, self.accepts, self.converters)
        self.signature = sig
        self.scopes = frozenset(self.scopes)
        self.definition = self._definition()

    def _definition(self) -> dict[str, Any]:
        d: dict[str, Any] = {"name": self.name}
        if self.title:
            d["title"] = self.title
        d["description"] = self.description
        d["inputSchema"] = self.input_schema
        if self.output_schema is not None:
            d["outputSchema"] = self.output_schema
        if self.annotations:
            d["annotations"] = self.annotations
        if self.task_support != "forbidden":
            d["execution"] = {"taskSupport": self.task_support}
        if self.meta:
            d["_meta"] = self.meta
        return d

    def bind(self, arguments: dict[str, Any]) -> dict[str, Any]:
        """Arguments the handler accepts (all of them when it takes ``**kwargs``)."""
        if self.accepts is None:
            return arguments
        return {k: v for k, v in arguments.items() if k in self.accepts}


@dataclass(eq=False)
class Resource:
    """A readable resource at a fixed URI."""

    uri: str
    name: str
    reader: Handler
    title: str | None = None
    description: str | None = None
    mime_type: str | None = None
    scopes: frozenset[str] = frozenset()
    listed: bool = True

    def __post_init__(self) -> None:
        sig = _typed.read_signature(self.reader, "resource", self.name)
        self.is_async = sig.is_async
        self.read = _resource_reader(self.reader, sig, ())
        self.definition = _resource_def({"uri": self.uri}, self)


@dataclass(eq=False)
class ResourceTemplate:
    """A family of resources, e.g. ``incident://{tenant}/{id}`` (RFC 6570 level 1)."""

    uri_template: str
    name: str
    reader: Handler
    title: str | None = None
    description: str | None = None
    mime_type: str | None = None
    scopes: frozenset[str] = frozenset()

    def __post_init__(self) -> None:
        parts = re.split(r"\{([A-Za-z_][A-Za-z0-9_]*)\}", self.uri_template)
        sig = _typed.read_signature(self.reader, "resource template", self.name)
        self.is_async = sig.is_async
        self.read = _resource_reader(self.reader, sig, parts[1::2])
        pattern = "".join(re.escape(p) if i % 2 == 0 else f"(?P<{p}>[^/?#]+)" for i, p in enumerate(parts))
        self._pattern = re.compile(f"^{pattern}$")
        self.definition = _resource_def({"uriTemplate": self.uri_template}, self)

    def match(self, uri: str) -> dict[str, str] | None:
        m = self._pattern.match(uri)
        return m.groupdict() if m else None


def _resource_reader(fn: Handler, sig: Signature, variables: Any) -> Callable[[Any, str, dict[str, str]], Any]:
    """``read(ctx, uri, params)``: the style before hints gets ``fn(ctx, uri, **params)``; a typed
    reader gets, by name, its ``ToolContext``, ``uri`` if it has such a parameter, and the
    template's variables."""
    if sig.legacy:
        return lambda ctx, uri, params: fn(ctx, uri, **params)
    names = sig.names()
    for var in variables:
        if var not in names and not sig.var_keyword:
            raise sig.fail(f"the URI template's variable {{{var}}} has no parameter of that name")
    for p in sig.params:
        if p.default is _typed.EMPTY and p.name != "uri" and p.name not in variables:
            raise sig.fail("a resource reader's parameters are 'uri' and the template's variables", p.name)
    takes_uri = "uri" in names or sig.var_keyword
    context = sig.context

    def read(ctx: Any, uri: str, params: dict[str, str]) -> Any:
        kwargs: dict[str, Any] = dict(params)
        if takes_uri:
            kwargs["uri"] = uri
        if context is None:
            return fn(**kwargs)
        if sig.positional_context:
            return fn(ctx, **kwargs)
        kwargs[context] = ctx
        return fn(**kwargs)
    return read


def _resource_def(d: dict[str, Any], r: Resource | ResourceTemplate) -> dict[str, Any]:
    d["name"] = r.name
    if r.title:
        d["title"] = r.title
    if r.description:
        d["description"] = r.description
    if r.mime_type:
        d["mimeType"] = r.mime_type
    return d


@dataclass(eq=False)
class Prompt:
    """A prompt template; ``arguments`` are ``{name, description?, required?}``."""

    name: str
    render: Handler
    description: str | None
    title: str | None = None
    arguments: list[dict[str, Any]] = field(default_factory=list)
    scopes: frozenset[str] = frozenset()
    completions: Mapping[str, Callable[[str], list[str]]] = field(default_factory=dict)

    signature: Signature | None = field(default=None, repr=False)

    def __post_init__(self) -> None:
        sig = self.signature or _typed.read_signature(self.render, "prompt", self.name)
        self.is_async = sig.is_async
        self.invoke = _invoker(self.render, sig, None if sig.var_keyword else sig.names(), {})
        self.required = tuple(a["name"] for a in self.arguments if a.get("required"))
        d: dict[str, Any] = {"name": self.name}
        if self.title:
            d["title"] = self.title
        if self.description:
            d["description"] = self.description
        if self.arguments:
            d["arguments"] = self.arguments
        self.definition = d


def _label_of(sig: Signature | None, what: str, name: str) -> str:
    return sig.label if sig is not None else f"{what} {name!r}"


class Registry:
    """Tools, resources, templates and prompts by name, in registration order."""

    def __init__(self) -> None:
        self.tools: dict[str, Tool] = {}
        self.resources: dict[str, Resource] = {}
        self.templates: list[ResourceTemplate] = []
        self.prompts: dict[str, Prompt] = {}
        #: The names of the synchronous tools without task support: a call of one runs its handler
        #: without ever giving the loop a turn, so it needs no task of its own to start in and no
        #: watcher for a disconnect that could not interrupt it anyway.  Decided at registration
        #: (both are fixed by the function and the decorator), and read by the engine's plan of
        #: every ``tools/call`` as one set look-up.
        self.answered_at_once: set[str] = set()

    def header_params(self, params: Any) -> tuple[tuple[str, str], ...]:
        """The ``Mcp-Param-*`` arguments (:attr:`Tool.header_params`) of the tool ``tools/call``
        ``params`` name; none for a name no tool has (or one that is not a string)."""
        name = params.get("name") if isinstance(params, dict) else None
        tool = self.tools.get(name) if type(name) is str else None
        return tool.header_params if tool is not None else ()

    def add_tool(self, tool: Tool) -> Tool:
        if tool.name in self.tools:
            raise RegistrationError(f"{_label_of(tool.signature, 'tool', tool.name)}: a tool named {tool.name!r} "
                                    "is already registered")
        self.tools[tool.name] = tool
        if not tool.is_async and tool.task_support == "forbidden":
            self.answered_at_once.add(tool.name)
        return tool

    def add_resource(self, resource: Resource) -> Resource:
        if resource.uri in self.resources:
            raise RegistrationError(f"resource {resource.name!r}: a resource at {resource.uri!r} is already "
                                    "registered")
        self.resources[resource.uri] = resource
        return resource

    def add_template(self, template: ResourceTemplate) -> ResourceTemplate:
        self.templates.append(template)
        return template

    def add_prompt(self, prompt: Prompt) -> Prompt:
        if prompt.name in self.prompts:
            raise RegistrationError(f"{_label_of(prompt.signature, 'prompt', prompt.name)}: a prompt named "
                                    f"{prompt.name!r} is already registered")
        self.prompts[prompt.name] = prompt
        return prompt

    def find_resource(self, uri: str) -> tuple[Resource | ResourceTemplate, dict[str, str]] | None:
        res = self.resources.get(uri)
        if res is not None:
            return res, {}
        for template in self.templates:
            params = template.match(uri)
            if params is not None:
                return template, params
        return None

    def __iter__(self) -> Iterator[Tool]:
        return iter(self.tools.values())


MaybeAwaitable = Any | Awaitable[Any]
