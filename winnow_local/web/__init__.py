"""The embedded default's local experience: API Gateway events built on this machine, the local HTTP
server, the search page and the demo samples. Nothing here ships to Lambda."""
