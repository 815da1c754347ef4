"""Python signatures → MCP definitions: who gets the context, ``inputSchema``, ``outputSchema``.

All of it runs once, at registration; a call only meets what it leaves behind: a handful of
per-parameter converters (none at all for ``str``/``int``/``bool``/``list[str]``… parameters,
whose JSON value already is the Python value) and one function that turns the return value into
a :class:`~truecall.results.ToolResult`.

The type → JSON Schema work is msgspec's (``msgspec.json.schema_components``): it knows the
standard library's ``TypedDict`` on every Python truecall supports (pydantic refuses it before
3.12), dataclasses, enums, ``Literal``, unions and ``Annotated[..., msgspec.Meta(...)]``, imports in
about 5 ms and is imported only when a signature needs it.  Constraints written the pydantic or
annotated-types way (``Field(ge=1, description=...)``, ``Ge(1)``, ``MaxLen(5)``) and a bare string
(a description) are translated into ``msgspec.Meta``.  A pydantic model as an annotation uses the
model's own schema and ``model_validate``; pydantic is never imported here (a model can only exist
if the user's code imported it).

**The context.**  A parameter annotated :class:`~truecall.ToolContext` (any position) receives it.
So that code written before type hints keeps working, an unannotated (or ``Any``) *first*
parameter named ``ctx`` receives it too, positionally; a tool that wants an argument called
``ctx`` annotates it (``ctx: str``).  A function with neither gets no context.
"""

from __future__ import annotations

import collections.abc
import enum
import functools
import inspect
import re
import sys
import types
import typing
from typing import Any, Callable, Iterator

import orjson

from .context import ToolContext
from ..results import ToolResult, text

__all__ = ["RegistrationError", "ArgumentError", "Signature", "read_signature", "derive_input", "derive_output",
           "prompt_arguments", "parse_doc", "as_result", "as_messages", "LEGACY_CONTEXT_NAME"]

#: The first-parameter name that receives the context without an annotation (the style before hints).
LEGACY_CONTEXT_NAME = "ctx"

EMPTY: Any = inspect.Parameter.empty
_NONE_TYPES = (None, type(None))


class RegistrationError(ValueError):
    """A function cannot become a tool, resource or prompt as declared (raised when it is registered)."""


class ArgumentError(Exception):
    """A validated argument still did not convert to its parameter's type (names the field)."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(message)
        self.field = field


class Param:
    """One parameter that receives an argument (plain classes here, not dataclasses: this module is
    imported with ``truecall`` and a dataclass costs a few hundred µs to create)."""

    __slots__ = ("name", "hint", "default", "kind")

    def __init__(self, name: str, hint: Any, default: Any, kind: Any) -> None:
        self.name = name
        self.hint = hint  # the resolved annotation, or EMPTY
        self.default = default  # or EMPTY
        self.kind = kind


class Signature:
    """What registration learned from one function."""

    def __init__(self, label: str, is_async: bool) -> None:
        self.label = label  # "tool 'add' (function m.add)": the start of every registration error
        self.is_async = is_async
        self.context: str | None = None  # the parameter that receives the ToolContext
        self.positional_context = False  # pass it first, positionally (legacy ``ctx`` or positional-only)
        self.legacy = False  # the style before type hints: an unannotated first ``ctx``
        self.params: list[Param] = []  # every other parameter, in order
        self.var_keyword = False
        self.returns: Any = EMPTY
        self.description = ""
        self.param_docs: dict[str, str] = {}
        #: parameter → its default's maker, for defaults Python cannot apply itself (pydantic's
        #: ``Field(default=...)`` as the default or inside ``Annotated``): filled in when absent
        self.fills: dict[str, Callable[[], Any]] = {}

    def names(self) -> frozenset[str]:
        return frozenset(p.name for p in self.params)

    def fail(self, message: str, param: str | None = None) -> RegistrationError:
        where = f"{self.label}, parameter {param!r}" if param else self.label
        return RegistrationError(f"{where}: {message}")


def _label(what: str, name: str | None, fn: Any) -> str:
    short = getattr(fn, "__name__", None) or type(fn).__name__
    where = getattr(fn, "__qualname__", None) or short
    module = getattr(fn, "__module__", None)
    return f"{what} {name or short!r} (function {module + '.' if module else ''}{where})"


class Unresolved:
    """An annotation that does not evaluate (a name not imported, a local class under ``from
    __future__ import annotations``).  It is an error only where truecall needs the type: a
    derived schema, a derived result, a prompt argument; with ``input_schema=`` given it is
    ignored, as it was before type hints were read."""

    __slots__ = ("text", "why")

    def __init__(self, text: str, why: str) -> None:
        self.text, self.why = text, why

    def names(self, suffix: str) -> bool:
        """Whether the text spells ``suffix`` (``ToolContext``, ``truecall.ToolContext``...)."""
        bare = self.text.strip().strip("'\"")
        return bare == suffix or bare.endswith("." + suffix)

    def error(self) -> str:
        return f"annotation {self.text!r} does not resolve ({self.why})"


def _resolve_hints(fn: Any, sig: inspect.Signature) -> dict[str, Any]:
    """Annotations with strings (``from __future__ import annotations``) evaluated; one that does
    not resolve is kept as :class:`Unresolved` (the error, if it matters, names its parameter)."""
    target = inspect.unwrap(fn)
    if not (inspect.isfunction(target) or inspect.ismethod(target)) and callable(target):
        target = getattr(target, "__call__", target)
    try:
        return typing.get_type_hints(target, include_extras=True)
    except Exception:
        pass
    globalns = getattr(inspect.unwrap(target), "__globals__", {})
    hints: dict[str, Any] = {}
    items = [(p.name, p.annotation) for p in sig.parameters.values()] + [("return", sig.return_annotation)]
    for key, annotation in items:
        if annotation is EMPTY:
            continue
        try:
            value: Any = annotation
            for _ in range(3):  # a quoted annotation under ``from __future__ import annotations``
                if isinstance(value, str):
                    value = eval(value, globalns)  # noqa: S307 - the user's own annotation
            hints[key] = value
        except Exception as exc:
            hints[key] = Unresolved(str(annotation), f"{type(exc).__name__}: {exc}")
    return hints


def _is_field_info(value: Any) -> bool:
    """pydantic's ``FieldInfo`` (what ``Field(...)`` makes), without importing pydantic."""
    cls = type(value)
    return cls.__name__ == "FieldInfo" and (cls.__module__ or "").startswith("pydantic")


def _field_default(hint: Any, default: Any) -> tuple[Any, Any, Callable[[], Any] | None]:
    """(hint, default, maker) for a parameter written with pydantic's ``Field``: ``x: int =
    Field(3, description=...)`` or ``x: Annotated[int, Field(default=3)]``.  The ``FieldInfo``
    moves into the annotation (its description and constraints are read there) and its default
    becomes the parameter's (shown in the schema, applied when the argument is absent)."""
    info = default if _is_field_info(default) else None
    if info is None:
        infos = [m for m in typing.get_args(hint)[1:] if _is_field_info(m)]
        if not infos:
            return hint, default, None
        info = infos[-1]
    elif hint is not EMPTY:
        hint = typing.Annotated[hint, info]
    else:
        hint = typing.Annotated[Any, info]
    value = getattr(info, "default", EMPTY)
    factory = getattr(info, "default_factory", None)
    if type(value).__name__ == "PydanticUndefinedType" or value is Ellipsis:
        if factory is None:
            return hint, EMPTY, None  # Field(...) / Field(description=...): required
        return hint, _FACTORY, factory
    return hint, value, lambda: value


#: The default of a parameter whose pydantic Field has a ``default_factory`` (not shown in the schema).
_FACTORY: Any = type("Factory", (), {"__repr__": lambda self: "<default_factory>"})()


def _is_context(hint: Any) -> bool:
    if isinstance(hint, Unresolved):
        return hint.names("ToolContext") or hint.names("Context")
    return isinstance(hint, type) and issubclass(hint, ToolContext)


def read_signature(fn: Any, what: str, name: str | None = None) -> Signature:
    """Reflect on ``fn`` once: the context parameter, the others, the return hint and the docstring."""
    label = _label(what, name, fn)
    if not callable(fn):
        raise RegistrationError(f"{what} {name or repr(fn)}: {type(fn).__name__} is not callable")
    try:
        sig = inspect.signature(fn)
    except (TypeError, ValueError) as exc:
        raise RegistrationError(f"{label}: its signature cannot be read ({exc})") from None
    raw = list(sig.parameters.values())
    needs_hints = any(p.annotation is not EMPTY for p in raw) or sig.return_annotation is not EMPTY
    hints = _resolve_hints(fn, sig) if needs_hints else {}
    out = Signature(label, inspect.iscoroutinefunction(fn) or inspect.iscoroutinefunction(getattr(fn, "__call__", None)))
    out.returns = hints.get("return", EMPTY)
    for index, p in enumerate(raw):
        hint = hints.get(p.name, EMPTY)
        if _is_context(_strip_annotated(hint)):
            if out.context is not None:
                raise out.fail(f"two parameters ask for the context ({out.context!r} and {p.name!r})", p.name)
            if p.kind is p.VAR_POSITIONAL or p.kind is p.VAR_KEYWORD:
                raise out.fail("the context cannot be a */** parameter", p.name)
            if p.kind is p.POSITIONAL_ONLY and index != 0:
                raise out.fail("a positional-only context must be the first parameter", p.name)
            out.context, out.positional_context = p.name, p.kind is p.POSITIONAL_ONLY
            continue
        if p.kind is p.VAR_KEYWORD:
            out.var_keyword = True
            continue
        if p.kind is p.VAR_POSITIONAL:
            raise out.fail("*args cannot receive arguments given by name", p.name)
        default = p.default
        if _is_field_info(default) or (default is EMPTY and typing.get_origin(hint) is typing.Annotated):
            hint, default, make = _field_default(hint, default)
            if make is not None:
                out.fills[p.name] = make
        out.params.append(Param(p.name, hint, default, p.kind))
    if out.context is None and raw and raw[0].name == LEGACY_CONTEXT_NAME \
            and hints.get(LEGACY_CONTEXT_NAME, EMPTY) in (EMPTY, Any) \
            and raw[0].kind in (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD):
        out.context, out.positional_context, out.legacy = LEGACY_CONTEXT_NAME, True, True  # before type hints
        out.params.pop(0)
    for param in out.params:
        if param.kind is inspect.Parameter.POSITIONAL_ONLY:
            raise out.fail("a positional-only parameter cannot receive an argument given by name", param.name)
    out.description, out.param_docs = parse_doc(fn)
    return out


# -- docstrings -------------------------------------------------------------------------------

_PARAM_SECTION_RE = (
    r"^[ \t]*(Args|Arguments|Parameters|Params|Keyword Args|Keyword Arguments)[ \t]*:[ \t]*$"  # Google
    r"|^[ \t]*(Parameters|Other Parameters)[ \t]*\n[ \t]*-{3,}[ \t]*$"  # NumPy
    r"|^[ \t]*:param\s")  # reST


def parse_doc(fn: Any) -> tuple[str, dict[str, str]]:
    """(description, {parameter: description}).  A docstring without a parameter section is the
    description as written; one with a section (Google, NumPy or reST, read by ``docstring_parser``)
    gives its parameters' descriptions and loses the section from the description."""
    raw = getattr(fn, "__doc__", None)
    if not isinstance(raw, str) or not raw.strip():
        return "", {}
    if not re.search(_PARAM_SECTION_RE, raw, re.MULTILINE):  # compiled once, by re's cache
        return raw.strip(), {}
    import docstring_parser

    try:
        doc = docstring_parser.parse(raw)
    except docstring_parser.ParseError:
        return raw.strip(), {}
    params = {p.arg_name: " ".join(p.description.split()) for p in doc.params if p.description}
    parts = [s.strip() for s in (doc.short_description, doc.long_description) if s and s.strip()]
    return ("\n\n".join(parts) or raw.strip()), params


# -- types → schemas --------------------------------------------------------------------------

def _strip_annotated(hint: Any) -> Any:
    while typing.get_origin(hint) is typing.Annotated:
        hint = typing.get_args(hint)[0]
    return hint


def _pydantic_model(hint: Any) -> Any:
    """The pydantic model class ``hint`` is, or None; never imports pydantic."""
    pyd = sys.modules.get("pydantic")
    base = getattr(pyd, "BaseModel", None) if pyd is not None else None
    hint = _strip_annotated(hint)
    return hint if base is not None and isinstance(hint, type) and issubclass(hint, base) else None


def _with_pydantic(hint: Any) -> Any:
    """pydantic's ``TypeAdapter`` for a hint with a model inside (``Optional[Model]``,
    ``list[Model]``…), or None; pydantic is loaded already whenever a model exists."""
    pyd = sys.modules.get("pydantic")
    if pyd is None:
        return None
    stack, seen = [hint], 0
    while stack and seen < 256:
        item = stack.pop()
        seen += 1
        if _pydantic_model(item) is not None:
            return pyd.TypeAdapter(hint)
        stack.extend(a for a in typing.get_args(item) if a is not Ellipsis)
    return None


_META_FIELDS = ("gt", "ge", "lt", "le", "multiple_of", "pattern", "min_length", "max_length")


def _meta_from(item: Any) -> Any:
    """``msgspec.Meta`` for one piece of ``Annotated`` metadata, or None for metadata that says
    nothing about the schema (kept out, as msgspec and pydantic do)."""
    import msgspec

    if isinstance(item, msgspec.Meta):
        return item
    if isinstance(item, str):
        return msgspec.Meta(description=item)
    kwargs: dict[str, Any] = {}
    module = type(item).__module__ or ""
    if module.startswith(("pydantic", "annotated_types")):
        for sub in getattr(item, "metadata", None) or ():  # pydantic's FieldInfo keeps its constraints here
            nested = _meta_from(sub)
            if nested is not None:
                kwargs.update({k: getattr(nested, k) for k in _META_FIELDS + ("description", "title", "examples")
                               if getattr(nested, k, None) is not None})
        for key in _META_FIELDS + ("description", "title"):
            value = getattr(item, key, None)
            if value is not None and not callable(value):
                kwargs[key] = value if key != "pattern" else str(getattr(value, "pattern", value))
        examples = getattr(item, "examples", None)
        if isinstance(examples, list) and examples:
            kwargs["examples"] = examples
    return msgspec.Meta(**kwargs) if kwargs else None


@functools.cache
def _formats() -> dict[Any, str]:
    """JSON Schema ``format`` of the standard types msgspec writes as strings (loaded when asked)."""
    import datetime
    import uuid

    return {datetime.datetime: "date-time", datetime.date: "date", datetime.time: "time",
            datetime.timedelta: "duration", uuid.UUID: "uuid"}



def _normalize(hint: Any) -> Any:
    """``hint`` with every ``Annotated`` metadata msgspec does not read turned into ``msgspec.Meta``
    and ``X | Y`` spelled as ``Union`` (which msgspec rebuilds into)."""
    origin = typing.get_origin(hint)
    if origin is typing.Annotated:
        base, *extra = typing.get_args(hint)
        metas = [m for m in (_meta_from(x) for x in extra) if m is not None]
        base = _normalize(base)
        return typing.Annotated[(base, *metas)] if metas else base
    fmt = _formats().get(hint) if origin is None and getattr(hint, "__module__", None) in ("datetime", "uuid") \
        else None
    if fmt is not None:  # msgspec says only "string"; the format tells a client what the string is
        import msgspec

        return typing.Annotated[hint, msgspec.Meta(extra_json_schema={"format": fmt})]
    if origin is typing.Union or origin is types.UnionType:
        return typing.Union[tuple(_normalize(a) for a in typing.get_args(hint))]
    if origin is typing.Literal or origin is None:
        return hint
    args = typing.get_args(hint)
    if args and origin in (list, tuple, dict, set, frozenset, collections.abc.Sequence, collections.abc.Mapping,
                           collections.abc.MutableSequence, collections.abc.MutableMapping, collections.abc.Set):
        return origin[tuple(a if a is Ellipsis else _normalize(a) for a in args)]
    return hint


def _schemas(hints: list[Any], fail: Callable[[int, str], RegistrationError]) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """JSON Schemas for ``hints`` sharing one ``$defs``; ``fail(index, why)`` names the culprit."""
    import msgspec

    out: list[dict[str, Any]] = [{} for _ in hints]
    defs: dict[str, Any] = {}
    plain: list[tuple[int, Any]] = []
    for i, hint in enumerate(hints):
        model = _pydantic_model(hint)
        if hint is EMPTY or hint is Any:
            continue
        adapter = None if model is not None else _with_pydantic(hint)
        if model is not None or adapter is not None:
            schema = (model.model_json_schema(ref_template="#/$defs/{model}") if model is not None
                      else adapter.json_schema(ref_template="#/$defs/{model}") if adapter is not None else {})
            defs.update(schema.pop("$defs", {}))
            out[i] = schema
            continue
        if _strip_annotated(hint) is ToolResult:
            raise fail(i, "a ToolResult is not an argument type")
        try:
            plain.append((i, _normalize(hint)))
        except (TypeError, ValueError) as exc:
            raise fail(i, f"annotation {_name(hint)} cannot become a JSON Schema ({exc})") from None
    if not plain:
        return out, defs
    try:
        schemas, components = msgspec.json.schema_components([h for _, h in plain], ref_template="#/$defs/{name}")
    except (TypeError, ValueError):
        for i, hint in plain:  # find which one
            try:
                msgspec.json.schema_components([hint])
            except (TypeError, ValueError) as exc:
                raise fail(i, _unsupported(hints[i], exc)) from None
        raise
    order = _declared_orders([h for _, h in plain])
    for (i, _), schema in zip(plain, schemas):
        out[i] = _in_declared_order(schema, order)
    defs.update({k: _in_declared_order(v, order, k) for k, v in components.items()})
    _formats_of_fields([h for _, h in plain], defs)
    return out, defs


def _reached(hints: list[Any]) -> Iterator[tuple[Any, dict[str, Any] | None]]:
    """Every type ``hints`` reach, once each: ``(hint, its fields)`` for a class with annotated
    fields (a ``TypedDict``, dataclass, ``Struct``…), ``(hint, None)`` for anything else (the
    members of a generic are reached, a ``Literal``'s values are not)."""
    seen: set[int] = set()
    stack = list(hints)
    while stack:
        hint = stack.pop()
        if id(hint) in seen:
            continue
        seen.add(id(hint))
        origin = typing.get_origin(hint)
        if origin is not None and origin is not typing.Literal:
            stack.extend(a for a in typing.get_args(hint) if a is not Ellipsis)
        fields = None
        if origin is None and isinstance(hint, type) and not issubclass(hint, enum.Enum):
            try:
                found = typing.get_type_hints(hint, include_extras=True)
            except Exception:
                found = {}
            if hint.__dict__.get("__annotations__") is not None or found:
                fields = found
                stack.extend(found.values())
        yield hint, fields


def _formats_of_fields(hints: list[Any], defs: dict[str, Any]) -> None:
    """The ``format`` of datetime/date/time/uuid fields inside classes (``TypedDict``, dataclass,
    ``Struct``), which msgspec writes as a bare ``string``: added to their ``$defs`` entries."""
    for hint, fields in _reached(hints):
        entry = defs.get(hint.__name__) if fields else None
        props = entry.get("properties") if isinstance(entry, dict) else None
        if not isinstance(props, dict) or not fields:
            continue
        for name, field in fields.items():
            field = _strip_annotated(field)
            options = typing.get_args(field) if typing.get_origin(field) in (typing.Union, types.UnionType) \
                else (field,)
            fmt = next((_formats()[o] for o in options if getattr(o, "__module__", None) in ("datetime", "uuid")
                        and o in _formats()), None)
            prop = props.get(name)
            if fmt is None or not isinstance(prop, dict):
                continue
            for target in [prop] + [a for a in prop.get("anyOf", []) if isinstance(a, dict)]:
                if target.get("type") == "string" and "format" not in target:
                    target["format"] = fmt


def _declared_orders(hints: list[Any]) -> dict[Any, list[Any]]:
    """Declaration orders msgspec sorts away: a class's fields (by name) and a ``Literal``'s or an
    ``Enum``'s values (by their sorted tuple), so that a schema reads in the order it was written."""
    orders: dict[Any, list[Any]] = {}
    for hint, fields in _reached(hints):
        if typing.get_origin(hint) is typing.Literal:
            values = list(typing.get_args(hint))
        elif isinstance(hint, type) and issubclass(hint, enum.Enum):
            values = [m.value for m in hint]
        else:
            if fields is not None:
                orders.setdefault(("fields", hint.__name__), list(fields))
            continue
        orders.setdefault(("values", _sort_key(values)), values)
    return orders


def _sort_key(values: list[Any]) -> Any:
    return tuple(sorted((repr(v) for v in values)))


def _in_declared_order(schema: Any, orders: dict[Any, list[Any]], name: str | None = None) -> Any:
    if isinstance(schema, list):
        return [_in_declared_order(s, orders) for s in schema]
    if not isinstance(schema, dict):
        return schema
    out = {k: _in_declared_order(v, orders) if k != "properties" else v for k, v in schema.items()}
    if out.get("items") is False:  # msgspec closes a tuple with a bare ``false``, which clients do not all read
        prefix = out.get("prefixItems")
        if isinstance(prefix, list) and out.get("maxItems") == len(prefix):
            del out["items"]  # maxItems already says it
        else:
            out["items"] = {"not": {}}
    enum_values = out.get("enum")
    if isinstance(enum_values, list):
        declared = orders.get(("values", _sort_key(enum_values)))
        if declared is not None and all(isinstance(v, (str, int, float, bool)) or v is None for v in declared):
            out["enum"] = list(declared)
        kinds = {type(v) for v in out["enum"]}
        if "type" not in out and len(kinds) == 1 and kinds <= {str, int, bool}:  # clients that read only "type"
            out["type"] = {str: "string", int: "integer", bool: "boolean"}[kinds.pop()]
    props = out.get("properties")
    if isinstance(props, dict):
        fields = orders.get(("fields", name or out.get("title")), [])
        ranked = sorted(props, key=lambda k: fields.index(k) if k in fields else len(fields))
        out["properties"] = {k: _in_declared_order(props[k], orders) for k in ranked}
        req = out.get("required")
        if isinstance(req, list):
            out["required"] = sorted(req, key=lambda k: fields.index(k) if k in fields else len(fields))
    return out


_SUPPORTED = ("str, int, float, bool, None, Optional/unions, Literal, Enum, list/dict/tuple/set, TypedDict, "
              "a dataclass, a msgspec Struct or a pydantic model, each optionally Annotated with constraints")


def _unsupported(hint: Any, exc: Exception) -> str:
    lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
    why = lines[-1] if lines else type(exc).__name__
    return f"annotation {_name(hint)} cannot become a JSON Schema ({why}); supported: {_SUPPORTED}"


def _name(hint: Any) -> str:
    return getattr(hint, "__qualname__", None) or repr(hint).replace("typing.", "")


def _json_default(value: Any) -> tuple[bool, Any]:
    if value is None or isinstance(value, (str, bool, int, float)):
        return True, value
    import msgspec

    try:
        return True, msgspec.to_builtins(value)
    except Exception:
        return False, None


# -- calls: which parameters need their JSON value converted -----------------------------------

_AS_IS = (str, int, bool, type(None), Any, EMPTY, object)


def _needs_conversion(hint: Any) -> bool:
    """False when the validated JSON value already is what the parameter's type means."""
    if hint in _AS_IS:
        return False
    origin = typing.get_origin(hint)
    if origin is typing.Annotated:
        return _needs_conversion(typing.get_args(hint)[0])
    if origin is typing.Literal:
        return False
    if origin is typing.Union or origin is types.UnionType:
        return any(_needs_conversion(a) for a in typing.get_args(hint))
    if origin in (list, collections.abc.Sequence):
        args = typing.get_args(hint)
        return bool(args) and _needs_conversion(args[0])
    if origin in (dict, collections.abc.Mapping):
        args = typing.get_args(hint)
        return len(args) == 2 and (args[0] is not str or _needs_conversion(args[1]))
    if hint in (list, dict):
        return False
    return True  # float (an int may come), tuples, enums, dataclasses, TypedDicts, models, datetimes…


def _converter(name: str, hint: Any) -> Callable[[Any], Any]:
    model = _pydantic_model(hint)
    if model is not None:
        def convert_model(value: Any) -> Any:
            try:
                return model.model_validate(value)
            except ValueError as exc:  # pydantic's ValidationError is a ValueError
                raise ArgumentError(name, f"field '{name}' is not a valid {model.__name__} "
                                    f"({len(getattr(exc, 'errors', lambda: [])())} problem(s))") from None
        return convert_model
    adapter = _with_pydantic(hint)
    if adapter is not None:
        def convert_adapted(value: Any) -> Any:
            try:
                return adapter.validate_python(value)
            except ValueError:
                raise ArgumentError(name, f"field '{name}' is not valid") from None
        return convert_adapted
    import msgspec

    target = _normalize(hint)
    convert = functools.partial(msgspec.convert, type=target)

    def convert_value(value: Any) -> Any:
        try:
            return convert(value)
        except msgspec.ValidationError as exc:
            where = str(exc).rpartition(" - at `$")[2].rstrip("`")
            raise ArgumentError(name, f"field '{name}{where}' is not valid") from None
    return convert_value


class InputPlan:
    __slots__ = ("schema", "converters")

    def __init__(self, schema: dict[str, Any], converters: dict[str, Callable[[Any], Any]]) -> None:
        self.schema = schema
        self.converters = converters


def derive_input(sig: Signature, explicit: dict[str, Any] | None, open_input: bool = False) -> InputPlan:
    """``inputSchema`` from the parameters (unless ``explicit`` is given, which wins) and the
    converters the call needs.  A derived schema is closed (``additionalProperties: false``) unless
    the function takes ``**kwargs``: a misspelt optional argument is a fixable error, not silence.
    ``open_input`` (``Server(extra_arguments="ignore")``) leaves it open, as FastMCP does."""
    params = sig.params
    if explicit is None:
        for p in params:
            if isinstance(p.hint, Unresolved):
                raise sig.fail(p.hint.error(), p.name)
        schemas, defs = _schemas([p.hint for p in params],
                                 lambda i, why: sig.fail(why, params[i].name))
        props: dict[str, Any] = {}
        required: list[str] = []
        for p, schema in zip(params, schemas):
            schema = dict(schema)
            doc = sig.param_docs.get(p.name)
            if doc and "description" not in schema:
                schema["description"] = doc
            if p.default is EMPTY:
                required.append(p.name)
            elif p.default is not _FACTORY:
                ok, value = _json_default(p.default)
                if ok:
                    schema["default"] = value
            props[p.name] = schema
        schema_out: dict[str, Any] = {"type": "object", "properties": props}
        if required:
            schema_out["required"] = required
        if not sig.var_keyword and not open_input:
            schema_out["additionalProperties"] = False
        if defs:
            schema_out["$defs"] = defs
    else:
        schema_out = explicit
    converters: dict[str, Callable[[Any], Any]] = {}
    for p in params:
        if p.hint is not EMPTY and not isinstance(p.hint, Unresolved) and _needs_conversion(p.hint):
            converters[p.name] = _converter(p.name, p.hint)
    return InputPlan(schema_out, converters)


# -- return values → results ------------------------------------------------------------------

def _is_structured(schema: dict[str, Any], defs: dict[str, Any]) -> bool:
    """An object at the root (after following a ``$ref``): its value is ``structuredContent``."""
    ref = schema.get("$ref")
    if isinstance(ref, str) and ref.startswith("#/$defs/"):
        schema = defs.get(ref[len("#/$defs/"):], {})
    return schema.get("type") == "object"


def _inline_root(schema: dict[str, Any], defs: dict[str, Any]) -> dict[str, Any]:
    ref = schema.get("$ref")
    if isinstance(ref, str) and ref.startswith("#/$defs/"):
        key = ref[len("#/$defs/"):]
        root = dict(defs[key])
        rest = {k: v for k, v in defs.items() if k != key or _refers(defs, key)}
        root.update({k: v for k, v in schema.items() if k != "$ref"})
        schema = root
        defs = rest
    else:
        schema = dict(schema)
    if defs:
        schema["$defs"] = defs
    return schema


def _refers(defs: dict[str, Any], key: str) -> bool:
    needle = f'"#/$defs/{key}"'
    import orjson

    return needle in orjson.dumps(defs).decode()


_PLAIN = (str, int, float, bool, type(None))


def _to_builtins(value: Any) -> Any:
    if type(value) in _PLAIN:
        return value
    dump = getattr(value, "model_dump", None)
    if dump is not None and _pydantic_model(type(value)) is not None:
        return dump(mode="json", by_alias=True)  # the schema names the fields by their aliases
    import msgspec

    return msgspec.to_builtins(value)


def as_result(out: Any) -> ToolResult:
    """The rule for a tool whose return is not annotated (or is ``ToolResult``): a result as it is,
    a dict is structured content, a str a text block, a list content blocks, None an empty result.
    Anything else (a number, say) says nothing about what it means without an annotation: a bug,
    withheld."""
    if isinstance(out, ToolResult):
        return out
    if isinstance(out, dict):
        return ToolResult.structured(out)
    if isinstance(out, str):
        return ToolResult([text(out)])
    if isinstance(out, list):
        from ._foreign import content_blocks

        return ToolResult(content_blocks(out))
    if out is None:
        return ToolResult([])
    from ._foreign import foreign_result

    found = foreign_result(out)  # CallToolResult, fastmcp's ToolResult, Image, TextContent…
    if found is not None:
        return found
    raise TypeError(f"a tool returned {type(out).__name__}; expected ToolResult, dict, str or list")


_JSON_LEAVES = (str, int, float, bool, type(None))


def _json_shaped(hint: Any, seen: frozenset[Any] = frozenset()) -> bool:
    """True when every value of ``hint`` already is JSON data, so a returned ``dict`` can go out as
    it is; a field that may hold a dataclass, a model, an enum, a tuple or anything unannotated
    (``Any``, a bare ``list``) is converted instead."""
    if hint in _JSON_LEAVES:
        return True
    if hint in seen:
        return True  # a recursive TypedDict: its other fields decide
    origin = typing.get_origin(hint)
    if origin is typing.Annotated:
        return _json_shaped(typing.get_args(hint)[0], seen)
    if origin is typing.Literal:
        return all(type(a) in _JSON_LEAVES for a in typing.get_args(hint))
    if origin is typing.Union or origin is types.UnionType:
        return all(_json_shaped(a, seen) for a in typing.get_args(hint))
    if origin in (list, collections.abc.Sequence):
        args = typing.get_args(hint)
        return bool(args) and _json_shaped(args[0], seen)
    if origin in (dict, collections.abc.Mapping):
        args = typing.get_args(hint)
        return len(args) == 2 and args[0] is str and _json_shaped(args[1], seen)
    if isinstance(hint, type) and typing.is_typeddict(hint):
        try:
            fields = typing.get_type_hints(hint, include_extras=True)
        except Exception:  # an annotation that does not resolve: convert rather than guess
            return False
        return all(_json_shaped(f, seen | {hint}) for f in fields.values())
    return False


def derive_output(sig: Signature, explicit: dict[str, Any] | None) -> tuple[dict[str, Any] | None, Callable[[Any], ToolResult]]:
    """(``outputSchema``, return value → result) from the return annotation.

    structured (``TypedDict``, dataclass, model, ``dict[str, ...]``): ``structuredContent`` plus
    its JSON as a text block; any other type: ``{"result": value}``; ``str``: one text block, no
    structured content; ``None``: an empty result; ``ToolResult`` (or no annotation): as returned,
    through ``legacy``.  A ``ToolResult`` returned by any tool passes through (an error, say).
    """
    legacy = as_result
    hint = sig.returns
    if isinstance(hint, Unresolved):
        if hint.names("ToolResult") or hint.names("CallToolResult") or explicit is not None:
            return explicit, legacy  # what the style before hints did with it
        raise sig.fail(f"return {hint.error()}")
    from ._foreign import is_result_type

    declared = _declared_by_result(hint)  # Annotated[CallToolResult, Model]: the SDK's way to give a schema
    if declared is not None and explicit is None:
        [schema], defs = _schemas([declared], lambda _i, why: sig.fail(f"return {why}"))
        if not _is_structured(schema, defs):
            raise sig.fail(f"return: the model after the result type must describe an object, not {_name(declared)}")
        return _inline_root(schema, defs), legacy
    members = typing.get_args(hint) if typing.get_origin(hint) in (typing.Union, types.UnionType) else (hint,)
    kept = tuple(m for m in members if not _passes_through(_strip_annotated(m), is_result_type))
    if hint is EMPTY or hint is Any or not kept:
        return explicit, legacy
    hint = kept[0] if len(kept) == 1 else typing.Union[kept]
    if hint in _NONE_TYPES:
        def empty(out: Any) -> ToolResult:
            return ToolResult([]) if out is None else legacy(out)
        return explicit, empty
    if _opaque_class(hint):  # a plain class without annotations: no schema; its attributes as JSON text
        def attributes(out: Any) -> ToolResult:
            if not isinstance(out, hint):
                return legacy(out)
            return ToolResult([text(orjson.dumps(_to_builtins(dict(vars(out)))).decode())])
        return explicit, attributes
    shape = _plain_class_shape(hint)
    if shape is not None:  # a plain class with annotated attributes (the SDK reads these too)
        hint, fields = shape
        dump: Callable[[Any], Any] = lambda out: _to_builtins(
            {k: getattr(out, k) for k in fields if hasattr(out, k)})
    [schema], defs = _schemas([hint], lambda _i, why: sig.fail(f"return {why}"))
    adapter = _with_pydantic(hint) if _pydantic_model(hint) is None else None
    if shape is not None:
        pass
    elif adapter is not None:
        dump = lambda out: adapter.dump_python(out, mode="json", by_alias=True)  # noqa: E731
    else:
        dump = _to_builtins
    if _is_structured(schema, defs):
        derived = _inline_root(schema, defs)
        base = _strip_annotated(hint)
        simple = (isinstance(base, type) and typing.is_typeddict(base)
                  or typing.get_origin(base) in (dict, collections.abc.Mapping)) and _json_shaped(base)

        def structured(out: Any) -> ToolResult:
            if simple and type(out) is dict:  # a TypedDict or dict value is already JSON-shaped
                return ToolResult.structured(out)
            if isinstance(out, ToolResult):
                return out
            from ._foreign import foreign_result

            found = foreign_result(out)
            if found is not None:  # a CallToolResult returned by a tool annotated with its data type
                return found
            data = dump(out)
            if not isinstance(data, dict):
                raise TypeError(f"returned {type(out).__name__}, annotated as an object")
            return ToolResult.structured(data)
        return (explicit if explicit is not None else derived), structured
    wrapped: dict[str, Any] = {"type": "object", "properties": {"result": schema}, "required": ["result"]}
    if defs:
        wrapped["$defs"] = defs

    def boxed(out: Any) -> ToolResult:
        """``{"result": value}`` as the facts; the text block is the value itself (``2``, not
        ``{"result":2}``; a string as it is), as FastMCP and the SDK write it."""
        kind = type(out)
        if kind is str:
            return ToolResult([text(out)], {"result": out})
        if isinstance(out, ToolResult):
            return out
        data = out if kind in _PLAIN else dump(out)
        return ToolResult([text(data if type(data) is str else orjson.dumps(data).decode())], {"result": data})
    return (explicit if explicit is not None else wrapped), boxed


def _user_class(hint: Any) -> bool:
    """A class of the application's own that no schema library reads (not a dataclass, TypedDict,
    enum, pydantic model or msgspec Struct, nor a standard type)."""
    import dataclasses

    return isinstance(hint, type) and hint.__module__ not in ("builtins", "typing", "datetime", "uuid", "decimal",
                                                            "collections", "pathlib") \
        and not (dataclasses.is_dataclass(hint) or typing.is_typeddict(hint) or issubclass(hint, enum.Enum)
                 or _pydantic_model(hint) is not None
                 or any((c.__module__ or "").startswith("msgspec") for c in hint.__mro__)
                 or any((c.__module__ or "").startswith(("mcp", "fastmcp")) for c in hint.__mro__))


def _opaque_class(hint: Any) -> bool:
    """A class of the application's own without annotated attributes: nothing to derive a schema from."""
    return _user_class(hint) and not any(vars(c).get("__annotations__") for c in hint.__mro__[:-1])


def _plain_class_shape(hint: Any) -> tuple[Any, list[str]] | None:
    """A plain class whose attributes are annotated (``class User: name: str; age: int`` with its
    own ``__init__``): a ``TypedDict`` of those annotations (a class-level default makes one
    optional) and the attribute names; ``None`` for anything msgspec or pydantic reads itself."""
    if not _user_class(hint) or hint.__dict__.get("__annotations__") is None:
        return None
    try:
        fields = typing.get_type_hints(hint, include_extras=True)
    except Exception:
        return None
    if not fields:
        return None
    shaped = {k: (typing.NotRequired[v] if k in vars(hint) else v) for k, v in fields.items()}
    return typing.TypedDict(hint.__name__, shaped), list(fields)  # type: ignore[operator]  # mypy reads literal fields only


def _passes_through(hint: Any, is_result_type: Callable[[Any], bool]) -> bool:
    """A result type, a content/media type, or a list of them: the value is content, not data."""
    if is_result_type(hint):
        return True
    if typing.get_origin(hint) in (list, collections.abc.Sequence):
        args = typing.get_args(hint)
        if args:
            inner = _strip_annotated(args[0])
            options = typing.get_args(inner) if typing.get_origin(inner) in (typing.Union, types.UnionType) \
                else (inner,)
            return all(o is str or is_result_type(_strip_annotated(o)) for o in options) and \
                any(o is not str for o in options)
    return False


def _declared_by_result(hint: Any) -> Any:
    """``Annotated[CallToolResult, Model]`` (the SDK's spelling of "this result's structured content
    is a Model"): ``Model``; else None."""
    if typing.get_origin(hint) is not typing.Annotated:
        return None
    from ._foreign import is_result_type

    base, *extra = typing.get_args(hint)
    if not is_result_type(base):
        return None
    for item in extra:
        if isinstance(item, type):
            return item
    return None


# -- prompts and resources --------------------------------------------------------------------

def prompt_arguments(sig: Signature) -> list[dict[str, Any]]:
    """Prompt arguments from the parameters: prompts take strings, so each is ``str`` (or unannotated)."""
    out = []
    for p in sig.params:
        if isinstance(p.hint, Unresolved):
            raise sig.fail(p.hint.error(), p.name)
        base = _strip_annotated(p.hint)
        options = typing.get_args(base) if typing.get_origin(base) in (typing.Union, types.UnionType) else (base,)
        if not all(o in (str, EMPTY, Any) or o in _NONE_TYPES for o in options):
            raise sig.fail(f"prompt arguments are strings; {_name(p.hint)} is not", p.name)
        arg: dict[str, Any] = {"name": p.name}
        doc = sig.param_docs.get(p.name) or _annotated_description(p.hint)
        if doc:
            arg["description"] = doc
        if p.default is EMPTY:
            arg["required"] = True
        out.append(arg)
    return out


def _annotated_description(hint: Any) -> str | None:
    if typing.get_origin(hint) is typing.Annotated:
        for item in typing.get_args(hint)[1:]:
            if isinstance(item, str):
                return item
            desc = getattr(item, "description", None)
            if isinstance(desc, str):
                return desc
    return None


def as_messages(out: Any) -> Any:
    """A prompt's return value as ``messages``: a string is one user text message."""
    if isinstance(out, str):
        return [{"role": "user", "content": {"type": "text", "text": out}}]
    if isinstance(out, list):
        return [{"role": "user", "content": {"type": "text", "text": m}} if isinstance(m, str) else _message(m)
                for m in out]
    return out


def _message(m: Any) -> Any:
    """A message written with the SDK's types (``base.UserMessage("...")``, ``PromptMessage``) as data."""
    dump = getattr(m, "model_dump", None)
    if dump is None:
        return m
    data = dump(mode="json", by_alias=True, exclude_none=True)
    return {"role": data.get("role"), "content": data.get("content")} if isinstance(data, dict) else data

