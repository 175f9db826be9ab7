"""A stdio MCP server with no SDK and no authentication, like the ones in the articles this project started
from: newline-delimited JSON-RPC on stdin, answers on stdout, logs on stderr. The gateway runs one of these
per MCP session, so `remember` keeps notes for one user's session only, and with --identity-env on
`whoami` knows who that user is."""
import base64
import json
import os
import sys

notes = []

TOOLS = [
    {"name": "whoami", "description": "who this process serves", "inputSchema": {"type": "object"}},
    {"name": "add", "description": "add two numbers",
     "inputSchema": {"type": "object", "properties": {"a": {"type": "number"}, "b": {"type": "number"}}, "required": ["a", "b"]}},
    {"name": "recall", "description": "the notes of this session", "inputSchema": {"type": "object"}},
    {"name": "remember", "description": "keep a note for this session",
     "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}},
]


def text(value):
    return {"content": [{"type": "text", "text": str(value)}]}


def caller(name):
    """An MCP_CALLER_* value: plain visible ASCII as it is, anything else as =?base64?...?= (UTF-8), decoded here."""
    value = os.environ.get(name)
    if value is not None and value.startswith("=?base64?") and value.endswith("?="):
        return base64.b64decode(value[9:-2]).decode("utf-8")
    return value


def call_tool(name, args):
    if name == "whoami":
        return text("subject %s, client %s, issuer %s" % (caller("MCP_CALLER_SUBJECT"), caller("MCP_CALLER_CLIENT_ID"), caller("MCP_CALLER_ISSUER")))
    if name == "add":
        return text(args["a"] + args["b"])
    if name == "recall":
        return text("; ".join(notes) or "no notes yet")
    if name == "remember":
        notes.append(args["text"])
        return text("%d note(s)" % len(notes))
    return {"content": [{"type": "text", "text": "unknown tool: %s" % name}], "isError": True}


def handle(msg):
    method, params = msg.get("method"), msg.get("params") or {}
    if method == "initialize":
        return {"protocolVersion": params.get("protocolVersion", "2025-11-25"), "capabilities": {"tools": {}},
                "serverInfo": {"name": "stdio-gateway-example", "version": "1.0.0"}}
    if method == "ping":
        return {}
    if method == "tools/list":
        return {"tools": TOOLS}
    if method == "tools/call":
        return call_tool(params.get("name"), params.get("arguments") or {})
    return None


for line in sys.stdin:
    if not line.strip():
        continue
    msg = json.loads(line)
    if "id" not in msg or "method" not in msg:  # notifications and answers: nothing to say
        continue
    result = handle(msg)
    if result is None:
        reply = {"jsonrpc": "2.0", "id": msg["id"], "error": {"code": -32601, "message": "Method not found: %s" % msg.get("method")}}
    else:
        reply = {"jsonrpc": "2.0", "id": msg["id"], "result": result}
    sys.stdout.write(json.dumps(reply) + "\n")
    sys.stdout.flush()
    sys.stderr.write("[example] answered %s\n" % msg.get("method"))
