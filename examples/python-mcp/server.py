"""A notes server built with the official Python SDK (`pip install "mcp>=1.23.1,<2"`), with no authentication of its
own: the gateway in front of it checks tokens and scopes.

    python3 server.py                # stdio: the gateway starts it, one process per session
    python3 server.py --http 3001    # Streamable HTTP on http://127.0.0.1:3001/mcp, stateless, JSON answers

Over stdio each process serves one session of one user, so the notes are that user's; with --identity-env on,
`whoami` names the caller. Over HTTP one process serves every caller, so the notes are shared.
"""
import base64
import os
import sys

from mcp.server.fastmcp import FastMCP


def http_port(argv):
    """The port after --http, or None for stdio."""
    if "--http" not in argv:
        return None
    index = argv.index("--http")
    return int(argv[index + 1]) if index + 1 < len(argv) else 3001


PORT = http_port(sys.argv[1:])
# Stateless with JSON answers: any request may go to this process without a session, and the gateway's list
# filtering reads plain JSON. host 127.0.0.1: only the gateway on this machine reaches it.
server = FastMCP(
    "python-notes",
    host="127.0.0.1",
    port=PORT or 3001,
    stateless_http=True,
    json_response=True,
    log_level="WARNING",
)
notes = []


def caller(name):
    """An MCP_CALLER_* variable: plain visible ASCII as it is, anything else as =?base64?...?= (UTF-8)."""
    value = os.environ.get(name)
    if value is not None and value.startswith("=?base64?") and value.endswith("?="):
        return base64.b64decode(value[9:-2]).decode("utf-8")
    return value


@server.tool()
def whoami() -> str:
    """Who this process serves (over stdio, with the gateway's --identity-env on)."""
    return "subject %s, client %s, issuer %s" % (
        caller("MCP_CALLER_SUBJECT"),
        caller("MCP_CALLER_CLIENT_ID"),
        caller("MCP_CALLER_ISSUER"),
    )


@server.tool()
def add(a: float, b: float) -> str:
    """Add two numbers."""
    total = a + b
    return str(int(total) if total == int(total) else total)


@server.tool()
def recall() -> str:
    """The notes kept so far."""
    return "; ".join(notes) or "no notes yet"


@server.tool()
def remember(text: str) -> str:
    """Keep a note."""
    notes.append(text)
    return "%d note(s)" % len(notes)


@server.resource("notes://recent", name="recent", mime_type="text/plain")
def recent() -> str:
    """The last three notes."""
    return "\n".join(notes[-3:])


@server.prompt()
def summarize_notes() -> str:
    """Ask for a summary of the notes."""
    return "Summarize these notes in one sentence:\n" + "\n".join(notes)


if __name__ == "__main__":
    server.run("streamable-http" if PORT is not None else "stdio")
