"""Starts the MCP server a host config names, exactly as written, with the official Python SDK.

Usage: python configured.py COMMAND "ARGS" MEMOREE_HOME PROJECT_DIR

COMMAND and the space-separated ARGS are what `memoree setup HOST` wrote into the host's file
(tests/switching.rs reads them back). Lists the tools; prints one summary line on success.
"""

import asyncio
import os
import sys

from mcp import StdioServerParameters
from mcp.client.client import Client

COMMAND, ARGS, HOME, PROJECT = sys.argv[1:5]


async def main():
    env = {key: value for key, value in os.environ.items() if not key.startswith("MEMOREE_")}
    env["MEMOREE_HOME"] = HOME
    server = StdioServerParameters(command=COMMAND, args=ARGS.split(), env=env, cwd=PROJECT)
    async with Client(server) as client:
        listed = await client.list_tools()
        names = {tool.name for tool in listed.tools}
        if "recall" not in names:
            raise AssertionError(f"no recall tool: {sorted(names)}")
    print(f"python mcp sdk: {len(names)} tools listed")


asyncio.run(main())
