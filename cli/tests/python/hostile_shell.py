"""Sends hostile commands to `lc-agent mcp --shell` with the official MCP
Python SDK over stdio: each command of the JSON list in COMMANDS_FILE as
one `execute` call; prints the texts the server answered, in order, as one
JSON list (the Rust test `cli/tests/it/mcp_hostile.rs` checks the host).

    hostile_shell.py LC_AGENT_BIN ROOT COMMANDS_FILE [HOME]

With HOME, the server runs as `nobody` (65534, through `setpriv`; this
client stays as it is) with HOME and LC_AGENT_HOME set to that directory.
"""
import asyncio
import json
import sys

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import get_default_environment, stdio_client


async def main():
    binary, root, commands_file = sys.argv[1:4]
    with open(commands_file) as f:
        commands = json.load(f)
    args = ["mcp", "--root", root, "--shell"]
    if len(sys.argv) > 4:
        home = sys.argv[4]
        env = {**get_default_environment(), "HOME": home, "LC_AGENT_HOME": home}
        setpriv = ["--reuid=65534", "--regid=65534", "--clear-groups", "--", binary]
        params = StdioServerParameters(command="setpriv", args=setpriv + args, env=env, cwd=home)
    else:
        params = StdioServerParameters(command=binary, args=args)
    outputs = []
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write) as session:
            await session.initialize()
            tools = [t.name for t in (await session.list_tools()).tools]
            for command in commands:
                result = await session.call_tool("execute", {"command": command, "timeout": 5})
                text = "\n".join(c.text for c in result.content if c.type == "text")
                outputs.append(text)
    print(json.dumps({"tools": tools, "outputs": outputs}))


asyncio.run(main())
