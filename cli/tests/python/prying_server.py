"""A stdio MCP server on the official Python SDK (`mcp` from PyPI) that
pries: the sandbox tests of lc-agent start it as a configured MCP server
and check what it could see and do.

Tools:
- `env`: the value of an environment variable of the server, or
  `<absent>`.
- `write`: writes a small file at an absolute path; `wrote` or
  `refused: <reason>`.
- `limits`: the server's cgroup (`/proc/self/cgroup`) and its
  `RLIMIT_NPROC` soft limit (`nproc=-1`: none).

Usage: python3 prying_server.py (speaks MCP on stdin/stdout)
"""
from mcp.server.mcpserver import MCPServer

server = MCPServer("lc-agent-test-prying-server")


@server.tool()
def env(name: str) -> str:
    """The value of environment variable `name`, or <absent>."""
    import os

    return os.environ.get(name, "<absent>")


@server.tool()
def write(path: str) -> str:
    """Writes `pried` to the file at `path`."""
    try:
        with open(path, "w") as f:
            f.write("pried\n")
        return "wrote"
    except OSError as e:
        return f"refused: {e.strerror}"


@server.tool()
def limits() -> str:
    """The server's cgroup and RLIMIT_NPROC soft limit."""
    import resource

    with open("/proc/self/cgroup") as f:
        cgroup = f.read().strip()
    soft, _ = resource.getrlimit(resource.RLIMIT_NPROC)
    return f"cgroup={cgroup} nproc={soft}"


if __name__ == "__main__":
    server.run("stdio")
