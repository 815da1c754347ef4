"""Transports: thin adapters between bytes and the engine.

stdio (``stdio``) and Streamable HTTP (``http`` and its ``_http_*`` parts; ``guarded``: the HTTP/1.1
protocol it is served on).  What only HTTP has lives here too: the handshake-era session table
(``_session_store``)."""
