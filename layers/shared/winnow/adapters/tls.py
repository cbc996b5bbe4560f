"""One TLS context for every HTTPS client a process builds (Voyage, Qdrant Cloud, a re-ranking server,
Ollama). Building a context loads the whole CA bundle: 20-60 ms of CPU each time, which a cold start
with Voyage and Qdrant paid twice, a client rebuilt after a failure paid again, and the test suite paid
for every stack it built. The context is httpx's default one (certifi's bundle, or ``SSL_CERT_FILE`` /
``SSL_CERT_DIR`` when set), made once; a context only reads its certificates after it is built, so
clients on any thread may share it."""

from __future__ import annotations

import ssl
from functools import lru_cache


@lru_cache(maxsize=1)
def tls_context() -> ssl.SSLContext:
    """The process's TLS context for our HTTPS clients, made on first use."""
    import httpx

    return httpx.create_ssl_context()
