"""Local-only tools around the Lambda handlers: ``winnow invoke`` (an event file through one function, as
``sam local invoke`` runs it, without Docker) and ``winnow mcp`` (an MCP server for agents).

Outside the ``winnow`` package on purpose: nothing here ships in the Lambda layer or a function bundle."""
