"""Checks the resources and log messages of `lc-agent mcp` with the official
MCP Python SDK over stdio: lists the files as resources and the template,
reads a text and a binary file, tries a file the path rules deny and a path
out of the root, sets the log level and sees a tool call's message, and
subscribes to a file that is then changed on disk. Prints what it saw as one
JSON object (the Rust test `cli/tests/it/mcp.rs` asserts on it).

    check_resources.py LC_AGENT_BIN ROOT [lc-agent mcp arguments...]
"""
import asyncio
import base64
import json
import os
import sys

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client


async def main():
    binary, root, extra = sys.argv[1], sys.argv[2], sys.argv[3:]
    logs, updated = [], []
    changed = asyncio.Event()

    async def on_log(params):
        logs.append({"level": params.level, "logger": params.logger, "data": params.data})

    async def on_message(message):
        message = getattr(message, "root", message)
        if getattr(message, "method", None) == "notifications/resources/updated":
            updated.append(message.params.uri)
            changed.set()

    params = StdioServerParameters(command=binary, args=["mcp", "--root", root, *extra])
    seen = {}
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write, logging_callback=on_log, message_handler=on_message) as session:
            init = await session.initialize()
            caps = init.capabilities
            seen["capabilities"] = {
                "resources": caps.resources is not None,
                "subscribe": bool(caps.resources and caps.resources.subscribe),
                "logging": caps.logging is not None,
            }
            listed = await session.list_resources()
            seen["resources"] = [[r.uri, r.name, r.mime_type] for r in listed.resources]
            templates = await session.list_resource_templates()
            seen["templates"] = [t.uri_template for t in templates.resource_templates]
            reads = {}
            for uri in ["file:///notes/todo.md", "file:///bin/data.bin", "file:///secret/key.txt",
                        "file:///../etc/passwd", "file:///missing.txt"]:
                try:
                    result = await session.read_resource(uri)
                    c = result.contents[0]
                    if hasattr(c, "text") and c.text is not None:
                        reads[uri] = {"mime": c.mime_type, "text": c.text}
                    else:
                        reads[uri] = {"mime": c.mime_type, "bytes": list(base64.b64decode(c.blob))}
                except Exception as e:
                    reads[uri] = {"error": str(e)}
            seen["reads"] = reads
            await session.set_logging_level("info")
            await session.call_tool("read_file", {"file_path": "/notes/todo.md"})
            await session.call_tool("read_file", {"file_path": "/secret/key.txt"})
            await session.subscribe_resource("file:///notes/todo.md")
            try:
                await session.subscribe_resource("file:///secret/key.txt")
                seen["subscribe_denied"] = "accepted"
            except Exception as e:
                seen["subscribe_denied"] = str(e)
            with open(os.path.join(root, "notes", "todo.md"), "a") as f:
                f.write("changed outside\n")
            try:
                await asyncio.wait_for(changed.wait(), 10)
            except asyncio.TimeoutError:
                pass
            seen["updated"] = updated
            # Logs arrive in order with the calls' answers.
            await asyncio.sleep(0.2)
            seen["logs"] = logs
    print(json.dumps(seen))


asyncio.run(main())
