"""An MCP server on the official Python SDK (`mcp` from PyPI), over
streamable HTTP on 127.0.0.1:PORT/mcp, for the client tests of lc-agent's
McpTools.

Tools:
- `interrupted`: sends a progress message, closes its SSE stream on purpose
  (SEP-1699: the client is to reconnect after `retry` with `Last-Event-ID`),
  then answers; the event store keeps what was sent meanwhile.

Usage: python3 sdk_server.py PORT
"""
import asyncio
import itertools
import sys

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
        self.replays += 1
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
            break
    return f"resumed: {text} ({events.replays - before} reconnections)"


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
