"""The MCP server: engram's memory tools for agents, bound to one tenant."""
