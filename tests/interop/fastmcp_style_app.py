"""A server written for FastMCP, ported by its import line only (issue 26, "What was seen").

Every feature here stopped at least one real FastMCP file from running on truecall: the context
methods, ``lifespan=``, session state, ``Image`` and ``CallToolResult`` returns, a prompt without a
docstring, a template given to ``@resource``, pydantic ``Field`` defaults, a module that parses
``sys.argv`` at import, and ``mcp.run()``.
"""

import argparse
import base64
import uuid
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Annotated

from mcp.types import CallToolResult, TextContent
from pydantic import BaseModel, Field

from truecall import Context, FastMCP, Image  # was: from fastmcp import FastMCP, Context; from fastmcp.utilities.types import Image

# A module that reads its own command line at import (argparse), as scripts do.
ARGS = argparse.ArgumentParser().parse_args()

PNG = base64.b64decode("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==")


@dataclass
class Db:
    name: str


@asynccontextmanager
async def lifespan(server):
    yield Db("inventory")


mcp = FastMCP(instructions="A FastMCP-style server", lifespan=lifespan)


class Person(BaseModel):
    name: str
    age: int = Field(ge=0)


@mcp.tool
async def chatty(text: str, ctx: Context) -> str:
    """Logs at every level and reports progress."""
    await ctx.debug("debug " + text)
    await ctx.info("info " + text)
    await ctx.warning("warning " + text)
    await ctx.error("error " + text)
    await ctx.report_progress(50, 100)
    await ctx.report_progress(progress=100, total=100, message="done")
    return text


@mcp.tool
async def ask_name(ctx: Context) -> str:
    """Asks the user for a name (a scalar response_type)."""
    answer = await ctx.elicit("What is your name?", response_type=str)
    if answer.action == "accept":
        return f"hello {answer.data}"
    return f"no name ({answer.action})"


@mcp.tool
async def ask_person(ctx: Context) -> str:
    """Asks for a person (a model as the schema, the SDK's way)."""
    answer = await ctx.elicit("Who?", Person)
    if answer.action == "accept":
        return f"{answer.data.name} is {answer.data.age}"
    return "nobody"


@mcp.tool
async def pay(ctx: Context) -> str:
    """Sends the user to a payment page whose URL differs every time it is made (the SDK's example)."""
    answer = await ctx.elicit_url("Please pay", f"https://example.com/pay?id={uuid.uuid4()}", str(uuid.uuid4()))
    return f"paid ({answer.action})"


@mcp.tool
async def remember(key: str, value: str, ctx: Context) -> str:
    """Keeps a value in the session's state."""
    await ctx.set_state(key, value)
    return ctx.session_id or "no session"


@mcp.tool
async def recall(key: str, ctx: Context) -> str:
    """Reads a value back from the session's state."""
    return str(await ctx.get_state(key))


@mcp.tool
def which_db(ctx: Context) -> str:
    """Reads the lifespan context."""
    return ctx.request_context.lifespan_context.name


@mcp.tool
def pixel() -> Image:
    """Returns an image."""
    return Image(data=PNG, format="png")


@mcp.tool
def direct() -> CallToolResult:
    """Returns a CallToolResult with _meta."""
    return CallToolResult(content=[TextContent(type="text", text="direct")], _meta={"trace": "abc"})


@mcp.tool
def greet(name: str = Field(description="Who to greet"),
          times: Annotated[int, Field(default=2, description="How often")] = 2) -> str:
    """Greets someone."""
    return " ".join([f"hi {name}"] * times)


@mcp.resource("item://{item_id}")
def item(item_id: str) -> str:
    """One item."""
    return f"item {item_id}"


@mcp.prompt
def review(code: str) -> str:
    return f"Review this: {code}"


if __name__ == "__main__":
    mcp.run()
