"""Checks `lc-agent mcp` with the official MCP Python SDK: lists the tools,
calls each file tool, tries path escapes, and prints what it saw as one JSON
object (the Rust test `cli/tests/it/mcp.rs` asserts on it).

    check_server.py stdio LC_AGENT_BIN ROOT
    check_server.py http URL TOKEN
"""
import asyncio
import json
import sys
import urllib.error
import urllib.request

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client


CALLS = [
    ("write_file", {"file_path": "/notes/todo.md", "content": "one\ntwo TODO\nthree\n"}),
    ("read_file", {"file_path": "/notes/todo.md"}),
    ("edit_file", {"file_path": "/notes/todo.md", "old_string": "two", "new_string": "TWO"}),
    ("ls", {"path": "/notes"}),
    ("glob", {"pattern": "**/*.md"}),
    ("grep", {"pattern": "TODO", "output_mode": "content"}),
    ("read_file", {"file_path": "/../etc/passwd"}),
    ("read_file", {"file_path": "~/secret"}),
    ("write_file", {"file_path": "/a/../../escape.txt", "content": "x"}),
    ("read_file", {"file_path": "/out/hostname"}),
    ("read_file", {}),
]


async def check(session):
    await session.initialize()
    listed = await session.list_tools()
    seen = {"tools": [t.name for t in listed.tools], "calls": []}
    for name, args in CALLS:
        result = await session.call_tool(name, args)
        text = "\n".join(c.text for c in result.content if c.type == "text")
        seen["calls"].append({"tool": name, "is_error": bool(result.is_error), "text": text})
    try:
        await session.call_tool("execute", {"command": "echo hi"})
        seen["execute"] = "called"
    except Exception as e:  # the server refuses: no shell
        seen["execute"] = str(e)
    return seen


async def main():
    mode = sys.argv[1]
    if mode == "stdio":
        params = StdioServerParameters(command=sys.argv[2], args=["mcp", "--root", sys.argv[3]])
        async with stdio_client(params) as (read, write):
            async with ClientSession(read, write) as session:
                seen = await check(session)
    else:
        from mcp.client.streamable_http import create_mcp_http_client, streamable_http_client
        url, token = sys.argv[2], sys.argv[3]
        # Without the token: refused.
        request = urllib.request.Request(url, data=b"{}", method="POST",
                                         headers={"Content-Type": "application/json"})
        try:
            urllib.request.urlopen(request, timeout=10)
            unauthorized = None
        except urllib.error.HTTPError as e:
            unauthorized = e.code
        headers = {"Authorization": f"Bearer {token}"}
        async with create_mcp_http_client(headers=headers) as http:
            async with streamable_http_client(url, http_client=http) as streams:
                read, write = streams[0], streams[1]
                async with ClientSession(read, write) as session:
                    seen = await check(session)
        seen["without_token"] = unauthorized
    print(json.dumps(seen))


asyncio.run(main())
