"""A small MCP server over stdio (JSON-RPC lines, no SDK) with faults on
purpose, for the client tests of lc-agent's McpTools.

Tools: echo (text back), pid (this process's id), hang (never answers),
crash (the process kills itself mid-call), bad (an invalid input schema),
add_tool (announces a new tool `added` with notifications/tools/list_changed),
flaky (an error result for its first two calls, then "steady").
"""
import json
import os
import signal
import sys

OBJ = {"type": "object", "properties": {"text": {"type": "string"}}}
tools = [
    {"name": "echo", "description": "Returns `text`.", "inputSchema": OBJ},
    {"name": "pid", "description": "The server's process id.", "inputSchema": {"type": "object"}},
    {"name": "hang", "description": "Never answers.", "inputSchema": {"type": "object"}},
    {"name": "crash", "description": "Dies mid-call.", "inputSchema": {"type": "object"}},
    {"name": "bad", "description": "Broken schema.", "inputSchema": {"type": "object", "properties": 5}},
    {"name": "add_tool", "description": "Adds the tool `added`.", "inputSchema": {"type": "object"}},
    {"name": "flaky", "description": "Fails twice, then works.", "inputSchema": {"type": "object"}},
]
flaky_calls = 0


def send(message):
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


def text(value, error=False):
    return {"content": [{"type": "text", "text": value}], "isError": error}


for line in sys.stdin:
    try:
        msg = json.loads(line)
    except ValueError:
        continue
    if "id" not in msg:
        continue
    rid, method = msg["id"], msg.get("method")
    params = msg.get("params") or {}
    if method == "initialize":
        send({"jsonrpc": "2.0", "id": rid, "result": {
            "protocolVersion": "2025-06-18",
            "capabilities": {"tools": {"listChanged": True}},
            "serverInfo": {"name": "fake", "version": "1.0.0"}}})
    elif method == "tools/list":
        send({"jsonrpc": "2.0", "id": rid, "result": {"tools": tools}})
    elif method == "ping":
        send({"jsonrpc": "2.0", "id": rid, "result": {}})
    elif method == "tools/call":
        name = params.get("name")
        args = params.get("arguments") or {}
        if name == "echo":
            send({"jsonrpc": "2.0", "id": rid, "result": text(args.get("text", ""))})
        elif name == "pid":
            send({"jsonrpc": "2.0", "id": rid, "result": text(str(os.getpid()))})
        elif name == "hang":
            pass
        elif name == "crash":
            os.kill(os.getpid(), signal.SIGKILL)
        elif name == "add_tool":
            if not any(t["name"] == "added" for t in tools):
                tools.append({"name": "added", "description": "Added later.", "inputSchema": {"type": "object"}})
            send({"jsonrpc": "2.0", "id": rid, "result": text("added")})
            send({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"})
        elif name == "flaky":
            flaky_calls += 1
            if flaky_calls <= 2:
                send({"jsonrpc": "2.0", "id": rid, "result": text(f"temporarily unavailable (call {flaky_calls})", True)})
            else:
                send({"jsonrpc": "2.0", "id": rid, "result": text("steady")})
        elif name == "added":
            send({"jsonrpc": "2.0", "id": rid, "result": text("the added tool ran")})
        else:
            send({"jsonrpc": "2.0", "id": rid, "error": {"code": -32602, "message": f"unknown tool {name}"}})
    else:
        send({"jsonrpc": "2.0", "id": rid, "error": {"code": -32601, "message": f"no method {method}"}})
