"""`dpmem serve`: the application-facing HTTP service (guide: docs/serve.md).

Where the paper's adversary, a third-party application, meets the interface. An application
authenticates with its own bearer token (the keys file stores SHA-256 hashes only,
dpmem_ref.serve.keys), may query only the users it is listed for, spends only its own
(user, application) budget scope of the runtime (dpmem_ref.runtime.AgentRuntime) and never
reaches memory management; the owner token manages memory and reads ledgers. Several replicas
share one ledger store (PostgreSQL across hosts).

Modules: `keys` (keys file, constant-time token check; stdlib only), `models` (request and
response bodies), `gate` (pure ASGI: body bound, authentication, no tracebacks, access log,
in-flight bound), `limits` (header/body/idle timeouts, connection limits), `turns` (served
turns: asynchronous release deadline, streaming), `app` (the FastAPI routes), `chat` (the
OpenAI-compatible facade), `mcp_server` (the MCP server), `server` (uvicorn on a bound socket),
`graph` (the application-side LangGraph node; stdlib HTTP); the subcommand and the replica
supervisor are `dpmem_ref.cli.serve`. Importing this package imports no web
framework: fastapi and uvicorn (extra `serve`) load only in `app` and `server`.

May import: every floor up to `runtime/` (and fastapi, uvicorn, mcp, langgraph, imported only when serving).
"""
