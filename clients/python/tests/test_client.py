"""The Python client against a real daemon: every call, the drift guard as
``rev=`` (If-Match), errors, where it finds the socket and the namespace,
and memd as the tools of an agent loop."""

from __future__ import annotations

import json
import os
import subprocess
import threading
from pathlib import Path

import pytest

import agent_tools
import memd_client
from conftest import memd_bin
from memd_client import (
    Client, DriftError, Memory, MemdError, NotFound, PreconditionRequired, Rejected, Unreachable,
)
from memd_client import _paths


def client(d, **kw) -> Client:
    kw.setdefault("namespace", "py")
    return Client(socket=d.socket, **kw)


def test_add_get_list_search_history(daemon):
    c = client(daemon)
    r = c.add("the build uses make", tags=["build"], category="fact", metadata={"tool": "make"})
    assert r.accepted and isinstance(r.id, int) and not r.deduped
    m = c.get(r.id)
    assert isinstance(m, Memory)
    assert (m.id, m.rev, m.content, m.namespace) == (r.id, 1, "the build uses make", "py")
    assert m.tags == ["build"] and m.category == "fact" and m.metadata == {"tool": "make"}
    again = c.add("the build uses make")
    assert again.deduped and again.id == r.id
    c.add("the tests run with nextest")
    assert [x.content for x in c.list()] == ["the tests run with nextest", "the build uses make"]
    assert [x.content for x in c.list(tag="build")] == ["the build uses make"]
    hits = c.search("nextest", mode="lexical")
    assert hits and hits[0].memory.content == "the tests run with nextest"
    assert hits[0].score > 0 and hits[0].matched == "lexical"
    updated = c.update(m.id, content="the build uses ninja", rev=m.rev)
    assert updated.rev == 2
    h = c.history(m.id)
    assert [r.content for r in h.revisions] == ["the build uses make"]
    assert h.chain[0].content == "the build uses ninja"
    # What the CLI sees is what the client stored.
    out = daemon.cli("--namespace", "py", "--json", "get", str(m.id))
    assert json.loads(out.stdout)["memory"]["content"] == "the build uses ninja"


def test_a_stale_rev_raises_drift_error_with_the_memory_as_it_is_now(daemon):
    c = client(daemon)
    m = c.get(c.add("the cache runs on port 6379").id)
    out = daemon.cli("--namespace", "py", "--agent", "ops", "update", str(m.id),
                     "--content", "the cache runs on port 7000", "--expect-rev", "1")
    assert out.returncode == 0, out.stderr
    with pytest.raises(DriftError) as e:
        c.update(m.id, content="the cache runs on port 6380", rev=m.rev)
    assert e.value.status == 412 and e.value.code == "drift"
    assert e.value.current.content == "the cache runs on port 7000"
    assert e.value.current.rev == 2
    assert e.value.changed_by["agent"] == "ops"
    with pytest.raises(DriftError):
        c.forget(m.id, rev=m.rev)
    # Nothing was written; with the new rev it passes.
    assert c.get(m.id).content == "the cache runs on port 7000"
    assert c.update(m.id, content="the cache runs on port 6380", rev=2).rev == 3
    # Without rev and without a session: the change is refused, not made blind.
    with pytest.raises(PreconditionRequired):
        c.update(m.id, content="blind")
    # A named session: its reads protect its writes.
    s = client(daemon, session="notebook", agent="py-agent")
    seen = s.get(m.id)
    assert s.update(m.id, tags=["cache"]).rev == seen.rev + 1
    assert s.forget(m.id) > 0
    with pytest.raises(NotFound):
        c.get(m.id)


def test_errors_have_memds_codes(daemon):
    c = client(daemon)
    with pytest.raises(Rejected) as e:
        c.add("x" * 20000)
    assert e.value.status == 422 and e.value.reason
    with pytest.raises(NotFound):
        c.get(987654)
    with pytest.raises(TypeError):
        c.add("x", colour="red")
    with pytest.raises(MemdError) as e:
        c.search("x", mode="telepathic")
    assert e.value.status == 400 and e.value.code == "invalid_input"


def test_a_leaked_secret_is_purged(daemon):
    c = client(daemon)
    leaked = c.add("the staging key is AKIAQXPYTHONPURGE1").id
    kept = c.add("deploys go out on tuesdays").id
    listed = c.purge(matching="akiaqxpython")
    assert not listed["purged"]
    assert [t["id"] for t in listed["targets"]] == [leaked]
    assert c.get(leaked).id == leaked
    done = c.purge(matching="akiaqxpython", confirm=True)
    assert done["purged"] and done["scrubbed"]
    with pytest.raises(NotFound):
        c.get(leaked)
    with pytest.raises(NotFound) as e:
        c.history(leaked)
    assert "purge" in str(e.value)
    assert c.get(kept).id == kept
    with pytest.raises(MemdError) as e:
        c.purge(matching="ak", confirm=True)
    assert e.value.code == "invalid_input"
    with pytest.raises(TypeError):
        c.purge()
    # The client's namespace only, unless asked for every one.
    elsewhere = client(daemon, namespace="py-other").add("another AKIAQXPYTHONPURGE2").id
    assert c.purge(matching="akiaqxpython", confirm=True)["targets"] == []
    done = c.purge(matching="akiaqxpython", confirm=True, all_namespaces=True)
    assert [(t["id"], t["namespace"]) for t in done["targets"]] == [(elsewhere, "py-other")]


def test_no_daemon_is_unreachable_naming_the_socket(tmp_path, monkeypatch):
    sock = str(tmp_path / "nobody.sock")
    with pytest.raises(Unreachable) as e:
        Client(socket=sock, namespace="x", autostart=False).status()
    assert sock in str(e.value) and e.value.socket == sock
    # MEMD_NO_AUTOSTART turns autostart off as it does for the CLI.
    monkeypatch.setenv("MEMD_NO_AUTOSTART", "1")
    assert Client(socket=sock, namespace="x").autostart is False
    with pytest.raises(Unreachable):
        Client(socket=sock, namespace="x", memd=memd_bin()).status()
    assert not os.path.exists(sock)
    # Without a memd binary to start, it says so.
    monkeypatch.delenv("MEMD_NO_AUTOSTART")
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(Unreachable) as e:
        Client(socket=sock, namespace="x").status()
    assert "no memd on PATH" in str(e.value)


def test_a_daemon_is_started_when_none_answers(tmp_path, monkeypatch):
    data = tmp_path / "data"
    monkeypatch.setenv("MEMD_DATA_DIR", str(data))
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.delenv("MEMD_SOCKET", raising=False)
    monkeypatch.delenv("MEMD_NO_AUTOSTART", raising=False)
    c = Client(namespace="auto", memd=memd_bin())
    assert c.socket == str(data / "memd.sock")
    try:
        r = c.add("the client started this daemon")
        assert r.accepted
        # A second client finds the running daemon: nothing more is started.
        assert [m.content for m in Client(namespace="auto", autostart=False).list()] == [
            "the client started this daemon"]
        status = c.status()
        assert status["paths"]["data_dir"] == str(data)
        assert (data / "memd.log").exists()
        # Its own session: a signal to the test's process group misses it.
        assert os.getpgid(status["pid"]) != os.getpgid(0)
    finally:
        subprocess.run([memd_bin(), "--data-dir", str(data), "--no-autostart", "stop"],
                       capture_output=True, env={**os.environ, "HOME": str(tmp_path)})


def test_sessions_show_the_exact_block_each_was_given(daemon):
    c = client(daemon)
    c.add("deploys go through the staging cluster first", category="procedure")
    out = daemon.cli("--namespace", "py", "--session", "work", "--json", "inject")
    given = json.loads(out.stdout)
    names = [s.name for s in c.sessions()]
    assert names == ["work"]
    s = c.named_session("work")
    assert s.block == given["block"] and s.block_hash == given["hash"]
    assert s.block_memories and s.block_memories[0]["rev"] == 1


def test_events_tell_a_change_made_elsewhere(daemon):
    c = client(daemon)
    got = []

    def follow():
        for e in c.events():
            got.append(e)
            if len(got) == 2:
                return

    t = threading.Thread(target=follow, daemon=True)
    t.start()
    import time
    deadline = time.time() + 10
    while not got and time.time() < deadline:
        time.sleep(0.02)
    daemon.cli("--namespace", "py", "add", "seen by the event stream")
    t.join(10)
    assert [e["event"] for e in got] == ["change", "change"]
    assert got[1]["data"]["generation"] > got[0]["data"]["generation"]


def test_the_socket_and_namespace_are_found_as_the_cli_finds_them(daemon, tmp_path, monkeypatch):
    for k in ["MEMD_SOCKET", "MEMD_NAMESPACE", "MEMD_DATA_DIR", "MEMD_CONFIG",
              "XDG_RUNTIME_DIR", "XDG_CONFIG_HOME", "XDG_DATA_HOME"]:
        monkeypatch.delenv(k, raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    # MEMD_SOCKET wins; then the running daemon of the data dir (its lock).
    monkeypatch.setenv("MEMD_SOCKET", daemon.socket)
    assert Client(namespace="x").socket == daemon.socket
    monkeypatch.delenv("MEMD_SOCKET")
    monkeypatch.setenv("MEMD_DATA_DIR", str(daemon.data))
    assert Client(namespace="x").socket == daemon.socket
    monkeypatch.delenv("MEMD_DATA_DIR")
    monkeypatch.setenv("XDG_RUNTIME_DIR", "/run/user/4242")
    assert _paths.socket() == "/run/user/4242/memd/memd.sock"
    # The namespace: the environment, the config file, the project.
    repo = tmp_path / "shop"
    (repo / "src").mkdir(parents=True)
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    subprocess.run(["git", "-C", str(repo), "remote", "add", "origin",
                    "git@github.com:Acme/Shop.git"], check=True)
    monkeypatch.chdir(repo / "src")
    cli = subprocess.run([daemon.bin, "--socket", daemon.socket, "--no-autostart", "--json",
                          "status"], capture_output=True, text=True,
                         env={**os.environ, "HOME": str(tmp_path)})
    assert cli.returncode == 0, cli.stderr
    derived = _paths.project_namespace(Path.cwd())
    assert derived == "github.com/acme/shop"
    # The CLI derives the same name for the same checkout.
    out = subprocess.run([daemon.bin, "--socket", daemon.socket, "--no-autostart", "--json",
                          "add", "from the CLI in the project"], capture_output=True,
                         text=True, env={**os.environ, "HOME": str(tmp_path)})
    assert out.returncode == 0, out.stderr
    c = Client(socket=daemon.socket)
    assert c.namespace == derived
    assert [m.content for m in c.list()] == ["from the CLI in the project"]
    # A .memd.toml counts once the person trusted it, as for the CLI.
    (repo / ".memd.toml").write_text('namespace = "acme-shop"\n')
    assert Client(socket=daemon.socket).namespace == derived
    trust = subprocess.run([daemon.bin, "trust"], capture_output=True, text=True,
                           env={**os.environ, "HOME": str(tmp_path)})
    assert trust.returncode == 0, trust.stderr
    assert Client(socket=daemon.socket).namespace == "acme-shop"
    (repo / ".memd.toml").write_text('namespace = "elsewhere"\n')
    assert Client(socket=daemon.socket).namespace == derived
    (repo / ".memd.toml").write_text('namespace = "acme-shop"\n')
    # Without an origin: the name and a hash, never a host's path.
    other = tmp_path / "plain"
    subprocess.run(["git", "init", "-q", str(other)], check=True)
    bare = _paths.project_namespace(other)
    assert bare.startswith("plain-") and len(bare) == len("plain-") + 8
    cfg = tmp_path / ".config" / "memd"
    cfg.mkdir(parents=True)
    (cfg / "config.toml").write_text('[client]\nnamespace = "from-config"\n')
    assert Client(socket=daemon.socket).namespace == "from-config"
    monkeypatch.setenv("MEMD_NAMESPACE", "from-env")
    assert Client(socket=daemon.socket).namespace == "from-env"
    assert Client(socket=daemon.socket, namespace="given").namespace == "given"


def test_urls_normalise_as_the_cli_does():
    root = Path("/nowhere/checkout")
    for url in ["https://github.com/Acme/Shop.git", "https://user@github.com/acme/shop/",
                "git@github.com:acme/shop.git", "ssh://git@github.com:22/acme/shop.git",
                "git+ssh://git@github.com/acme/shop"]:
        assert _paths.normalize_url(url, root) == "github.com/acme/shop", url
    assert _paths.fnv1a64("") == "cbf29ce484222325"


def test_an_agent_loop_uses_memd_as_its_tools(daemon):
    c = client(daemon, agent="loop-agent")
    names = {t["name"] for t in agent_tools.TOOLS}
    assert names == {"memory_search", "memory_store", "memory_get", "memory_update"}
    state = {}

    def model(messages):
        """A scripted model: store, search, read, lose a race, read, retry."""
        last = messages[-1]
        if last["role"] == "user":
            return {"tool": "memory_store", "args": {"content": "the staging database is db-2"}}
        result = json.loads(last["content"])
        if last["name"] == "memory_store":
            return {"tool": "memory_search", "args": {"query": "staging database"}}
        if last["name"] == "memory_search":
            state["id"], state["rev"] = result[0]["id"], result[0]["rev"]
            # Someone else changes it before this agent's update.
            daemon.cli("--namespace", "py", "update", str(state["id"]), "--content",
                       "the staging database is db-3", "--expect-rev", str(state["rev"]))
            return {"tool": "memory_update", "args": {"id": state["id"], "rev": state["rev"],
                                                      "content": "staging: db-2 (primary)"}}
        if last["name"] == "memory_update" and result.get("code") == "drift":
            assert result["current"]["content"] == "the staging database is db-3"
            return {"tool": "memory_get", "args": {"id": state["id"]}}
        if last["name"] == "memory_get":
            return {"tool": "memory_update", "args": {"id": state["id"], "rev": result["rev"],
                                                      "content": "staging: db-3 (primary)"}}
        return {"answer": result["content"]}

    messages = agent_tools.run(c, model, "remember where staging lives")
    assert messages[-1]["content"] == "staging: db-3 (primary)"
    assert c.get(state["id"]).content == "staging: db-3 (primary)"


def test_supersede_tasks_confirm_and_a_sessions_block(daemon):
    c = client(daemon, session="work", agent="py-agent")
    old = c.get(c.add("the cache runs on port 6379").id)
    new = c.add("the cache runs on port 6380").id
    assert c.supersede(old.id, new) > 0
    assert c.history(new).chain[0].id == old.id
    t = c.add("write the release notes", category="task", metadata={"status": "pending"})
    task = c.get(t.id)
    moved = c.move_task(task.id, "in_progress")
    assert moved.metadata["status"] == "in_progress" and moved.rev == task.rev + 1
    assert c.confirm(new).confirmed_count == 1
    block = c.inject()
    assert "port 6380" in block and block == c.inject(), "frozen"
    assert block == c.named_session("work").block
    c.add("deploys go through staging", category="procedure")
    assert c.inject() != block, "the session's own write rebuilds its block"
    c.refresh()
    c.compacted()
    c.end_session()
    assert [s.name for s in c.sessions()] == []
