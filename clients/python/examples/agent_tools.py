"""memd as the tools of a function-calling agent loop, with no framework.

``TOOLS`` are JSON-schema tool definitions in the shape function-calling
APIs take (name, description, parameters); ``call(client, name, args)``
runs one tool call and returns the JSON text to hand back to the model. A
drift refusal is returned to the model, not raised: the model reads the
memory again (``memory_get``) and retries with the new ``rev``.

Run ``python agent_tools.py`` with a daemon running to see a scripted loop.
"""

from __future__ import annotations

import json
from dataclasses import asdict
from typing import Any, Callable, Dict, List

from memd_client import Client, MemdError

TOOLS: List[Dict[str, Any]] = [
    {
        "name": "memory_search",
        "description": "Search memory for what earlier sessions learned.",
        "parameters": {
            "type": "object",
            "properties": {"query": {"type": "string"}, "limit": {"type": "integer"}},
            "required": ["query"],
        },
    },
    {
        "name": "memory_store",
        "description": "Store one durable fact, decision or preference.",
        "parameters": {
            "type": "object",
            "properties": {
                "content": {"type": "string"},
                "category": {"type": "string"},
                "tags": {"type": "array", "items": {"type": "string"}},
            },
            "required": ["content"],
        },
    },
    {
        "name": "memory_get",
        "description": "Read one memory (its rev is what a change is made on).",
        "parameters": {
            "type": "object",
            "properties": {"id": {"type": "integer"}},
            "required": ["id"],
        },
    },
    {
        "name": "memory_update",
        "description": "Change a memory you read, giving the rev you read.",
        "parameters": {
            "type": "object",
            "properties": {
                "id": {"type": "integer"},
                "rev": {"type": "integer"},
                "content": {"type": "string"},
            },
            "required": ["id", "rev", "content"],
        },
    },
]


def call(client: Client, name: str, args: Dict[str, Any]) -> str:
    """Runs tool ``name`` with ``args``; the result as JSON text."""
    try:
        if name == "memory_search":
            hits = client.search(args["query"], limit=args.get("limit", 5))
            out: Any = [{"id": h.memory.id, "rev": h.memory.rev, "content": h.memory.content,
                         "score": round(h.score, 3)} for h in hits]
        elif name == "memory_store":
            r = client.add(args["content"], category=args.get("category"),
                           tags=args.get("tags") or [])
            out = asdict(r)
        elif name == "memory_get":
            m = client.get(args["id"])
            out = {"id": m.id, "rev": m.rev, "content": m.content}
        elif name == "memory_update":
            m = client.update(args["id"], content=args["content"], rev=args["rev"])
            out = {"id": m.id, "rev": m.rev, "content": m.content}
        else:
            out = {"error": f"no tool {name}"}
    except MemdError as e:
        out = {"error": str(e), "code": e.code}
        current = getattr(e, "current", None)
        if current is not None:
            out["current"] = {"id": current.id, "rev": current.rev, "content": current.content}
    return json.dumps(out)


def run(client: Client, model: Callable[[List[Dict[str, Any]]], Dict[str, Any]],
        task: str, max_turns: int = 10) -> List[Dict[str, Any]]:
    """A function-calling loop: ``model`` sees the messages so far and
    answers either ``{"tool": name, "args": {...}}`` or ``{"answer": text}``."""
    messages: List[Dict[str, Any]] = [{"role": "user", "content": task}]
    for _ in range(max_turns):
        step = model(messages)
        if "answer" in step:
            messages.append({"role": "assistant", "content": step["answer"]})
            break
        messages.append({"role": "assistant", "tool": step["tool"], "args": step["args"]})
        messages.append({"role": "tool", "name": step["tool"],
                         "content": call(client, step["tool"], step["args"])})
    return messages


if __name__ == "__main__":
    memd = Client(agent="example-agent")
    script = iter([
        {"tool": "memory_store", "args": {"content": "the staging database is db-2"}},
        {"tool": "memory_search", "args": {"query": "staging database"}},
        {"answer": "done"},
    ])
    for m in run(memd, lambda _messages: next(script), "remember where staging lives"):
        print(m)
