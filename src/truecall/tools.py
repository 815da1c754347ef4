"""Tool, resource and prompt definitions, compiled once at registration.

Registration does all the reflection and schema compilation; the call path only
reads precomputed attributes.
"""

from __future__ import annotations

import inspect
import re
from dataclasses import dataclass, field
from typing import Any, Awaitable, Callable, Iterator, Mapping

from .schema import EMPTY_OBJECT_SCHEMA, SchemaError, Validator

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


def _call_shape(fn: Handler) -> tuple[bool, frozenset[str] | None]:
    """(is_async, accepted keyword names or None for **kwargs)."""
    is_async = inspect.iscoroutinefunction(fn)
    params = list(inspect.signature(fn).parameters.values())[1:]  # first one is the context
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params):
        return is_async, None
    return is_async, frozenset(p.name for p in params if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY))


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
        self.output_validator = Validator(self.output_schema) if self.output_schema is not None else None
        self.is_async, self.accepts = _call_shape(self.handler)
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
        self.is_async = inspect.iscoroutinefunction(self.reader)
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
        self.is_async = inspect.iscoroutinefunction(self.reader)
        parts = re.split(r"\{([A-Za-z_][A-Za-z0-9_]*)\}", self.uri_template)
        pattern = "".join(re.escape(p) if i % 2 == 0 else f"(?P<{p}>[^/?#]+)" for i, p in enumerate(parts))
        self._pattern = re.compile(f"^{pattern}$")
        self.definition = _resource_def({"uriTemplate": self.uri_template}, self)

    def match(self, uri: str) -> dict[str, str] | None:
        m = self._pattern.match(uri)
        return m.groupdict() if m else None


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
    description: str
    title: str | None = None
    arguments: list[dict[str, Any]] = field(default_factory=list)
    scopes: frozenset[str] = frozenset()
    completions: Mapping[str, Callable[[str], list[str]]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.is_async = inspect.iscoroutinefunction(self.render)
        self.required = tuple(a["name"] for a in self.arguments if a.get("required"))
        d: dict[str, Any] = {"name": self.name}
        if self.title:
            d["title"] = self.title
        d["description"] = self.description
        if self.arguments:
            d["arguments"] = self.arguments
        self.definition = d


class Registry:
    """Tools, resources, templates and prompts by name, in registration order."""

    def __init__(self) -> None:
        self.tools: dict[str, Tool] = {}
        self.resources: dict[str, Resource] = {}
        self.templates: list[ResourceTemplate] = []
        self.prompts: dict[str, Prompt] = {}

    def answers_at_once(self, params: Any) -> bool:
        """``tools/call`` ``params`` that name a synchronous tool without task support: its handler
        runs without ever giving the loop a turn, so the call needs no task of its own to start in
        and no watcher for a disconnect that could not interrupt it anyway.  (Any JSON may be in
        ``params``: a name that is a list is unhashable.)"""
        name = params.get("name") if isinstance(params, dict) else None
        tool = self.tools.get(name) if type(name) is str else None
        return tool is not None and not tool.is_async and tool.task_support == "forbidden"

    def add_tool(self, tool: Tool) -> Tool:
        if tool.name in self.tools:
            raise ValueError(f"tool {tool.name!r} is already registered")
        self.tools[tool.name] = tool
        return tool

    def add_resource(self, resource: Resource) -> Resource:
        if resource.uri in self.resources:
            raise ValueError(f"resource {resource.uri!r} is already registered")
        self.resources[resource.uri] = resource
        return resource

    def add_template(self, template: ResourceTemplate) -> ResourceTemplate:
        self.templates.append(template)
        return template

    def add_prompt(self, prompt: Prompt) -> Prompt:
        if prompt.name in self.prompts:
            raise ValueError(f"prompt {prompt.name!r} is already registered")
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
