"""An MCP server on the official Python SDK (`mcp` from PyPI), over
streamable HTTP on 127.0.0.1:PORT/mcp, for the client tests of lc-agent's
McpTools.

Tools:
- `interrupted`: sends a progress message, closes its SSE stream on purpose
  (SEP-1699: the client is to reconnect after `retry` with `Last-Event-ID`),
  then answers; the event store keeps what was sent meanwhile.
- `book_table`: asks the person for a booking (`elicitation/create`, a
  form with a required text, an integer and an enum with defaults, a
  boolean) and answers with what it got, as JSON: whether the client
  declared the elicitation capability, the action, the content. With a
  LOG file, each such answer is also appended to it as a JSON line, and
  so is `{"cancelled": true, ...}` when the client cancels the call
  while it asks.

Usage: python3 sdk_server.py PORT [LOG]
"""
import asyncio
import itertools
import json
import sys
from typing import Literal

from pydantic import BaseModel, Field

from mcp.server.mcpserver import Context, MCPServer
from mcp.server.streamable_http import EventMessage, EventStore


class MemoryEventStore(EventStore):
    """Every event of every stream, in memory, for replay."""

    def __init__(self):
        self.events = []  # (event id, stream id, message)
        self.ids = itertools.count(1)
        self.replays = 0  # reconnections with Last-Event-ID

    async def store_event(self, stream_id, message):
        event_id = str(next(self.ids))
        self.events.append((event_id, stream_id, message))
        return event_id

    async def replay_events_after(self, last_event_id, send_callback):
        stream = None
        for event_id, stream_id, _ in self.events:
            if event_id == last_event_id:
                stream = stream_id
        if stream is None:
            return None
        after = False
        for event_id, stream_id, message in list(self.events):
            if after and stream_id == stream and message is not None:
                await send_callback(EventMessage(message, event_id))
            if event_id == last_event_id:
                after = True
        # Counted once the replay is sent: a tool waiting for the
        # reconnection answers only after it, so its answer is not stored
        # while the replay's snapshot of the events is being sent.
        self.replays += 1
        return stream


events = MemoryEventStore()
server = MCPServer("lc-agent-test-sdk-server")


@server.tool()
async def interrupted(text: str, ctx: Context) -> str:
    """Closes its event stream before answering; answers `resumed: TEXT
    (N reconnections)` when the client came back with Last-Event-ID."""
    before = events.replays
    await ctx.info("closing the stream now")
    await ctx.close_sse_stream()
    for _ in range(100):
        await asyncio.sleep(0.05)
        if events.replays > before:
            # The SDK listens on the resumed stream once the replay has
            # returned: give it a moment before answering on it.
            await asyncio.sleep(0.3)
            break
    return f"resumed: {text} ({events.replays - before} reconnections)"


class Booking(BaseModel):
    name: str = Field(title="Name", description="who the table is for")
    party: int = Field(default=2, title="Party", description="how many people", ge=1, le=12)
    room: Literal["inside", "terrace"] = Field(default="inside", title="Room")
    vegetarian: bool = Field(default=False, title="Vegetarian")


@server.tool()
async def book_table(day: str, ctx: Context) -> str:
    """Books a table on DAY after asking the person for the details."""
    capabilities = ctx.session.client_capabilities
    declared = capabilities is not None and capabilities.elicitation is not None
    try:
        result = await ctx.elicit(f"Book a table for {day}?", Booking)
    except asyncio.CancelledError:
        log_line(json.dumps({"cancelled": True, "declared": declared}))
        raise
    got = {"declared": declared, "action": result.action}
    if result.action == "accept":
        got["content"] = result.data.model_dump()
    line = json.dumps(got, sort_keys=True)
    log_line(line)
    return line


def log_line(line):
    if len(sys.argv) > 2:
        with open(sys.argv[2], "a") as log:
            log.write(line + "\n")


if __name__ == "__main__":
    port = int(sys.argv[1])
    asyncio.run(
        server.run_streamable_http_async(
            host="127.0.0.1",
            port=port,
            event_store=events,
            retry_interval=200,
        )
    )
