"""An external MCP client (the `mcp` package from PyPI) driving `memd mcp`.

Run by tests/mcp.rs against a daemon the Rust harness started:

    python mcp_client.py MEMD_BINARY DATA_DIR

It starts `memd mcp` over stdio, initializes (the classic `initialize`
handshake most hosts use), lists the tools, calls every tool, reads
memory://inject twice (identical bytes), checks that a write by another
session leaves the block frozen until memory_compacted, and that a change
made by the sqlite3 shell arrives as notifications/resources/updated and
makes memory_update fail with a tool error carrying the drift JSON. Then
it connects again with the 2026-07-28 protocol (`server/discover`, no
`initialize`) and checks the same frozen block and drift refusal, with the
change announced on a `subscriptions/listen` stream. Any failed check
raises; the last line printed is "mcp client: N checks passed".
"""

import json
import subprocess
import sys

import anyio
import mcp_types as types
from mcp import Client
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

EXPECTED_TOOLS = {
    "memory_store",
    "memory_search",
    "memory_get",
    "memory_list",
    "memory_update",
    "memory_forget",
    "memory_supersede",
    "memory_history",
    "memory_task_add",
    "memory_task_update",
    "memory_task_list",
    "memory_compacted",
}

checks = 0


def check(condition, what):
    global checks
    if not condition:
        raise AssertionError(what)
    checks += 1


def structured(result):
    """The tool's JSON: structured_content, which equals the text content."""
    text = result.content[0].text
    check(json.loads(text) == result.structured_content, "text and structured content agree")
    return result.structured_content


async def call_ok(session, name, args):
    result = await session.call_tool(name, args)
    body = structured(result)
    check(not result.is_error, f"{name} {args} succeeded: {body}")
    check(body.get("success") is not False, f"{name} reports success: {body}")
    return body


async def read_text(session, uri):
    result = await session.read_resource(uri)
    check(len(result.contents) == 1, f"{uri} has one content")
    return result.contents[0].text


async def main(memd, data_dir):
    db = f"{data_dir}/memory.db"
    updates = []
    updated = anyio.Event()

    async def on_message(message):
        if isinstance(message, types.ResourceUpdatedNotification):
            updates.append(message.params.uri)
            updated.set()

    params = StdioServerParameters(
        command=memd,
        args=["--data-dir", data_dir, "--no-autostart", "mcp"],
        env={"MEMD_LOG": "warn"},
    )
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write, message_handler=on_message) as session:
            init = await session.initialize()
            check(init.server_info.name == "memd", f"server name: {init.server_info}")
            check(init.capabilities.resources.subscribe, "resources can be subscribed")
            check(init.instructions and "memory://inject" in init.instructions, "instructions")

            tools = (await session.list_tools()).tools
            names = {t.name for t in tools}
            check(names == EXPECTED_TOOLS, f"tool names: {sorted(names)}")
            for t in tools:
                check(t.input_schema.get("type") == "object", f"{t.name} schema is an object")
                check(len(t.description or "") > 40, f"{t.name} has a description")

            # Every tool, through the one session.
            a = await call_ok(session, "memory_store", {
                "content": "The deploy script lives in ops/deploy.sh",
                "category": "fact", "subject": "deploy", "tags": ["ops"],
                "metadata": {"owner": "infra", "port": 5432}, "expires": "30d"})
            b = await call_ok(session, "memory_store", {
                "content": "Releases are cut on Tuesdays", "category": "convention"})
            check(a["accepted"] and b["accepted"], "stores accepted")
            id_a, id_b = a["id"], b["id"]
            hits = await call_ok(session, "memory_search", {"query": "deploy script", "limit": 5})
            check(hits["hits"] and hits["hits"][0]["id"] == id_a, f"search finds it: {hits}")
            got = await call_ok(session, "memory_get", {"id": id_a})
            check(got["memory"]["metadata"] == {"owner": "infra", "port": 5432}, f"metadata: {got}")
            check(got["memory"]["tags"] == ["ops"], "tags")
            listed = await call_ok(session, "memory_list", {"tags": ["ops"]})
            check([m["id"] for m in listed["memories"]] == [id_a], f"list by tag: {listed}")
            upd = await call_ok(session, "memory_update", {
                "id": id_b, "content": "Releases are cut on Wednesdays"})
            check(upd["memory"]["content"] == "Releases are cut on Wednesdays", f"update: {upd}")
            c = await call_ok(session, "memory_store", {
                "content": "The deploy script moved to ops/ship.sh", "category": "fact"})
            sup = await call_ok(session, "memory_supersede", {"old_id": id_a, "new_id": c["id"]})
            check(sup["old"] == id_a and sup["new"] == c["id"], f"supersede: {sup}")
            hist = await call_ok(session, "memory_history", {"id": c["id"]})
            check([m["id"] for m in hist["chain"]] == [id_a, c["id"]], f"history: {hist}")
            task = await call_ok(session, "memory_task_add", {"content": "Write the release notes"})
            open_tasks = await call_ok(session, "memory_task_list", {})
            check(task["id"] in [m["id"] for m in open_tasks["memories"]], "task listed")
            done = await call_ok(session, "memory_task_update", {"id": task["id"], "status": "completed"})
            check(done["memory"]["metadata"]["status"] == "completed", f"task done: {done}")
            still_open = await call_ok(session, "memory_task_list", {})
            check(task["id"] not in [m["id"] for m in still_open["memories"]], "closed task gone")
            gone = await call_ok(session, "memory_store", {"content": "A temporary note to forget"})
            fgt = await call_ok(session, "memory_forget", {"id": gone["id"]})
            check(fgt["forgotten"], f"forget: {fgt}")
            comp = await call_ok(session, "memory_compacted", {})
            check(comp["invalidated"], "compacted")

            # Bad arguments: a tool error the model can read, not a crash.
            bad = await session.call_tool("memory_get", {"id": "seven"})
            check(bad.is_error and structured(bad)["code"] == "usage", "bad arguments")

            # The frozen block: identical bytes on every read.
            first = await read_text(session, "memory://inject")
            second = await read_text(session, "memory://inject")
            check(first == second, "memory://inject is byte-stable")
            check("Releases are cut on Wednesdays" in first, f"block content: {first!r}")
            prompt = await session.get_prompt("memory")
            check(prompt.messages[0].content.text == first, "prompt = resource")

            # Another session stores: this session's block stays frozen ...
            subprocess.run(
                [memd, "--data-dir", data_dir, "--no-autostart", "add",
                 "Staging uses the blue cluster", "--category", "fact"],
                check=True, capture_output=True)
            check(await read_text(session, "memory://inject") == first, "frozen across others' writes")
            # ... until compacted.
            await call_ok(session, "memory_compacted", {})
            third = await read_text(session, "memory://inject")
            check(third != first and "Staging uses the blue cluster" in third, "rebuilt after compacted")
            # Its own store changes it too.
            await call_ok(session, "memory_store", {"content": "Logs are kept for 14 days", "category": "fact"})
            check("Logs are kept for 14 days" in await read_text(session, "memory://inject"), "own write")

            # Drift: an external writer (the sqlite3 shell) changes a memory.
            await session.subscribe_resource("memory://drift")
            before = await call_ok(session, "memory_get", {"id": id_b})
            drift0 = json.loads(await read_text(session, "memory://drift"))
            check(drift0["changed_outside"] is False, f"no drift yet: {drift0}")
            subprocess.run(
                ["sqlite3", "-batch", "-cmd", ".timeout 5000", db,
                 f"UPDATE memories SET content = 'Releases are cut on Fridays' WHERE id = {id_b}"],
                check=True)
            with anyio.fail_after(15):
                await updated.wait()
            check("memory://drift" in updates, f"resource updated: {updates}")
            drift1 = json.loads(await read_text(session, "memory://drift"))
            check(drift1["changed_outside"] and drift1["last"]["generation"] > 0, f"drift: {drift1}")
            refused = await session.call_tool("memory_update", {
                "id": id_b, "content": "Releases are cut on Mondays",
                "expect_rev": before["memory"]["rev"]})
            body = structured(refused)
            check(refused.is_error, f"drift is a tool error: {body}")
            check(body["code"] == "drift" and body["success"] is False, f"drift code: {body}")
            check(body["drift_backup"].endswith(".json") and body["generation_actual"] > body["generation_observed"],
                  f"drift details: {body}")
            reread = await call_ok(session, "memory_get", {"id": id_b})
            check(reread["memory"]["content"] == "Releases are cut on Fridays", "external edit visible")
            retry = await call_ok(session, "memory_update", {
                "id": id_b, "content": "Releases are cut on Mondays",
                "expect_rev": reread["memory"]["rev"]})
            check(retry["memory"]["content"] == "Releases are cut on Mondays", "retry after reading")
    await modern(memd, data_dir)
    print(f"mcp client: {checks} checks passed")


async def modern(memd, data_dir):
    """The same session rules over the 2026-07-28 protocol."""
    db = f"{data_dir}/memory.db"
    params = StdioServerParameters(
        command=memd,
        args=["--data-dir", data_dir, "--no-autostart", "mcp"],
        env={"MEMD_LOG": "warn"},
    )
    async with Client(params, mode="auto") as client:
        check(client.protocol_version == "2026-07-28", f"modern protocol: {client.protocol_version}")
        stored = await client.call_tool("memory_store", {"content": "The modern protocol works too"})
        check(not stored.is_error, f"store: {stored}")
        mid = stored.structured_content["id"]
        first = (await client.read_resource("memory://inject")).contents[0].text
        again = (await client.read_resource("memory://inject")).contents[0].text
        check(first == again and "The modern protocol works too" in first, "frozen block")
        got = await client.call_tool("memory_get", {"id": mid})
        check(not got.is_error, f"get: {got}")
        async with client.listen(resource_subscriptions=["memory://drift"]) as sub:
            check(sub.honored.resource_subscriptions == ["memory://drift"], f"honored: {sub.honored}")
            subprocess.run(
                ["sqlite3", "-batch", "-cmd", ".timeout 5000", db,
                 f"UPDATE memories SET content = 'Edited by the shell' WHERE id = {mid}"],
                check=True)
            with anyio.fail_after(15):
                async for event in sub:
                    check(event.uri == "memory://drift", f"event: {event}")
                    break
        refused = await client.call_tool("memory_forget", {"id": mid})
        check(refused.is_error and refused.structured_content["code"] == "drift",
              f"drift refusal: {refused}")


if __name__ == "__main__":
    anyio.run(main, sys.argv[1], sys.argv[2])
