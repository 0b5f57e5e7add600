"""A client for memd, the daemon that gives AI agents a shared, persistent
memory. It speaks memd's HTTP API over the daemon's Unix socket, with the
standard library only.

When no daemon answers, the client starts one as memd's CLI does (the
``memd`` binary on ``PATH``, in the background, logging to
``<data_dir>/memd.log``); ``autostart=False`` or ``MEMD_NO_AUTOSTART=1``
turns that off.

The drift guard is HTTP's conditional request: a memory's ``rev`` is its
``ETag``, ``rev=`` on a change is ``If-Match``, and a change made on a stale
read raises :class:`DriftError` with the memory as it is now.
"""

from __future__ import annotations

import http.client
import json
import os
import shutil
import socket as _socket
import subprocess
import time
import urllib.parse
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Dict, Iterator, List, Optional

from . import _paths

__all__ = [
    "Client",
    "Memory",
    "Hit",
    "AddResult",
    "Revision",
    "History",
    "SessionInfo",
    "MemdError",
    "DriftError",
    "NotFound",
    "Rejected",
    "Conflict",
    "PreconditionRequired",
    "TeamUnavailable",
    "Forbidden",
    "OutcomeUnknown",
    "Unreachable",
]

#: How long one call may take, in seconds (a search over a large store, a
#: write that waits for the team's PostgreSQL).
DEFAULT_TIMEOUT = 60.0

#: How long a daemon the client started may take to answer, in seconds.
AUTOSTART_WAIT = 10.0


@dataclass
class Memory:
    """One memory, as memd's CLI shows it with ``--json``."""

    id: int
    rev: int
    content: str
    namespace: str
    uid: str = ""
    scope: str = "project"
    scope_owner: Optional[str] = None
    subject: Optional[str] = None
    category: str = "note"
    tier: int = 2
    importance: str = "medium"
    confidence: float = 1.0
    pinned: bool = False
    status: str = "promoted"
    metadata: Any = field(default_factory=dict)
    tags: List[str] = field(default_factory=list)
    superseded_by: Optional[int] = None
    observation_count: int = 1
    confirmed_count: int = 0
    source: str = "agent"
    created_by: Optional[str] = None
    expires_at: Optional[str] = None
    created_at: str = ""
    updated_at: str = ""
    thread: Optional[str] = None
    extra: Dict[str, Any] = field(default_factory=dict)

    @classmethod
    def from_json(cls, obj: Dict[str, Any]) -> "Memory":
        known = {f for f in cls.__dataclass_fields__ if f != "extra"}
        args = {k: v for k, v in obj.items() if k in known}
        extra = {k: v for k, v in obj.items() if k not in known}
        return cls(extra=extra, **args)


@dataclass
class Hit:
    """A search hit: the memory, its score and how it matched."""

    memory: Memory
    score: float
    matched: str


@dataclass
class AddResult:
    """What an add did: stored (``id``), merged into a duplicate, or said
    what it is similar to; where the namespace requires review (team
    memory), a ``proposal`` (``id`` is None until a reviewer approves it)."""

    accepted: bool
    id: Optional[int]
    deduped: bool = False
    merged_into: Optional[int] = None
    similar_to: Optional[int] = None
    reason: Optional[str] = None
    generation: int = 0
    proposal: Optional[int] = None


@dataclass
class Revision:
    """An earlier version of a memory."""

    memory_id: int
    op: str
    rev: Optional[int]
    content: Optional[str]
    recorded_at: str
    extra: Dict[str, Any] = field(default_factory=dict)


@dataclass
class History:
    """A memory's supersession chain and its earlier versions."""

    chain: List[Memory]
    revisions: List[Revision]
    generation: int


@dataclass
class SessionInfo:
    """A named session, and (from :meth:`Client.named_session`) the block it was
    given."""

    namespace: str
    name: str
    agent: str
    has_block: bool
    block: Optional[str] = None
    block_hash: Optional[str] = None
    block_memories: List[Dict[str, int]] = field(default_factory=list)


class MemdError(Exception):
    """memd refused a request: ``code`` is memd's error code (as the CLI's
    ``--json`` prints it), ``status`` the HTTP status, ``body`` the whole
    problem document."""

    def __init__(self, message: str, code: str = "internal", status: int = 0,
                 body: Optional[Dict[str, Any]] = None):
        super().__init__(message)
        self.code = code
        self.status = status
        self.body = body or {}


class DriftError(MemdError):
    """The memory changed after the version this write was made on (or
    another tool changed the database after the session's view). Nothing
    was written: ``current`` is the memory as it is now (``None`` for a
    refusal on the whole view), ``changed_by`` who changed it."""

    @property
    def current(self) -> Optional[Memory]:
        cur = self.body.get("current")
        return Memory.from_json(cur) if isinstance(cur, dict) else None

    @property
    def changed_by(self) -> Optional[Dict[str, Any]]:
        return self.body.get("changed_by")


class NotFound(MemdError):
    """No such memory (or not visible to this client)."""


class Rejected(MemdError):
    """Refused by the write gate; ``reason`` says why."""

    @property
    def reason(self) -> Optional[str]:
        return self.body.get("reason")


class Conflict(MemdError):
    """A conflict (a double supersession, an invalid task move)."""


class PreconditionRequired(MemdError):
    """A change without ``rev=`` and without a named session."""


class TeamUnavailable(MemdError):
    """The team's PostgreSQL cannot be reached: nothing was written."""


class Forbidden(MemdError):
    """The team's PostgreSQL role of the daemon's machine may not make this
    change (its grants): nothing was written."""


class OutcomeUnknown(MemdError):
    """A shared write whose outcome could not be learned: it may have been
    applied (look for it before writing it again)."""

    @property
    def operation_id(self) -> Optional[str]:
        return self.body.get("operation_id")


class Unreachable(MemdError):
    """No memd daemon answers on the socket (and none could be started)."""

    def __init__(self, socket: str, cause: Exception, detail: str = ""):
        super().__init__(f"no memd daemon answers on {socket}: {cause}{detail}", "unreachable")
        self.socket = socket


def _truthy(value: Optional[str]) -> bool:
    return (value or "").strip().lower() in ("1", "true", "yes", "on")


def _tail(path: Path, lines: int = 10) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return ""


_ERRORS = {
    "drift": DriftError,
    "not_found": NotFound,
    "rejected": Rejected,
    "conflict": Conflict,
    "precondition_required": PreconditionRequired,
    "team_unavailable": TeamUnavailable,
    "team_outcome_unknown": OutcomeUnknown,
    "forbidden": Forbidden,
}


class _UnixConnection(http.client.HTTPConnection):
    def __init__(self, path: str, timeout: float):
        super().__init__("memd", timeout=timeout)
        self._path = path

    def connect(self) -> None:
        sock = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
        sock.settimeout(self.timeout)
        try:
            sock.connect(self._path)
        except OSError:
            sock.close()
            raise
        self.sock = sock


_FIELDS = {
    "category", "subject", "tags", "scope", "tier", "pinned", "importance",
    "status", "confidence", "expires", "supersedes", "metadata", "thread",
    "position", "occurred_at",
}
_CHANGES = {
    "category", "subject", "tags", "scope", "tier", "pinned", "importance",
    "status", "confidence", "expires", "metadata",
}
_FILTERS = {
    "category", "subject", "tag", "any_tag", "scope", "meta", "since", "until",
    "updated_since", "updated_until", "include_superseded", "include_archived",
    "status", "agent", "tier", "source", "limit", "offset", "mode", "syntax",
}


class Client:
    """One client of a memd daemon.

    ``socket``: the daemon's socket (default: ``MEMD_SOCKET``, else memd's
    default path, as the CLI finds it). ``namespace``: default as the CLI
    resolves it. ``session``: a named session to join (its reads protect
    its writes). ``agent``: the agent this client acts as. ``autostart``:
    start a daemon when none answers, as the CLI does (default: yes, unless
    ``MEMD_NO_AUTOSTART`` is 1, true, yes or on); ``memd``: the binary to
    start (default: ``memd`` on ``PATH``).
    """

    def __init__(self, socket: Optional[str] = None, namespace: Optional[str] = None,
                 session: Optional[str] = None, agent: Optional[str] = None,
                 timeout: float = DEFAULT_TIMEOUT, autostart: Optional[bool] = None,
                 memd: Optional[str] = None):
        self.socket = str(socket) if socket else _paths.socket()
        self.namespace = namespace or _paths.namespace(Path.cwd())
        self.session = session
        self.agent = agent
        self.timeout = timeout
        if autostart is None:
            autostart = not _truthy(os.environ.get("MEMD_NO_AUTOSTART"))
        self.autostart = autostart
        self.memd = memd

    # -- starting a daemon ------------------------------------------------

    def _answers(self) -> bool:
        sock = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
        try:
            sock.settimeout(1.0)
            sock.connect(self.socket)
            return True
        except OSError:
            return False
        finally:
            sock.close()

    def _spawn(self, program: str, data_dir: Path) -> subprocess.Popen:
        data_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
        log = os.open(data_dir / "memd.log", os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        args = [program, "daemon", "--data-dir", str(data_dir), "--socket", self.socket]
        if os.environ.get("MEMD_CONFIG"):
            args += ["--config", os.environ["MEMD_CONFIG"]]
        try:
            # Its own session: a Ctrl-C in the caller's terminal does not
            # reach the daemon.
            return subprocess.Popen(args, stdin=subprocess.DEVNULL, stdout=log, stderr=log,
                                    start_new_session=True, close_fds=True)
        finally:
            os.close(log)

    def _start_daemon(self, cause: Exception) -> None:
        """Starts a daemon when none answers, and waits until it does. Two
        clients that start one at once both spawn a daemon: one wins the
        data dir's lock, the other exits, and both connect to the winner;
        when ours exits and still nobody answers (a stopping daemon held
        the lock a moment longer), another is started after a pause."""
        program = self.memd or shutil.which("memd")
        if not program:
            raise Unreachable(self.socket, cause,
                              "; and no memd on PATH to start one (install memd, or "
                              "pass memd= the binary)") from None
        data_dir = _paths.data_dir()
        try:
            child = self._spawn(program, data_dir)
        except OSError as e:
            raise Unreachable(self.socket, cause, f"; cannot run {program}: {e}") from None
        deadline = time.monotonic() + AUTOSTART_WAIT
        delay, pause, exited_at = 0.005, 0.1, None
        while not self._answers():
            now = time.monotonic()
            if now > deadline:
                log = data_dir / "memd.log"
                raise Unreachable(self.socket, cause,
                                  f"; the daemon it started did not answer within "
                                  f"{AUTOSTART_WAIT:.0f}s; last lines of {log}:\n{_tail(log)}"
                                  ) from None
            if exited_at is None and child.poll() is not None:
                exited_at = now
            if exited_at is not None and now - exited_at >= pause:
                child = self._spawn(program, data_dir)
                exited_at, pause = None, pause * 2
            time.sleep(delay)
            delay = min(delay * 2, 0.1)

    def _connected(self, conn: http.client.HTTPConnection, method: str, path: str,
                   body: Optional[bytes], headers: Dict[str, str]) -> http.client.HTTPResponse:
        """Sends one request; when nothing answers and autostart is on,
        starts a daemon and sends it again."""
        try:
            conn.request(method, path, body=body, headers=headers)
            return conn.getresponse()
        except (FileNotFoundError, ConnectionRefusedError) as e:
            if not self.autostart:
                raise Unreachable(self.socket, e) from None
            conn.close()
            self._start_daemon(e)
        try:
            conn.request(method, path, body=body, headers=headers)
            return conn.getresponse()
        except (FileNotFoundError, ConnectionRefusedError) as e:
            raise Unreachable(self.socket, e) from None

    # -- plumbing ---------------------------------------------------------

    def _headers(self, join: bool = True) -> Dict[str, str]:
        h = {"Memd-Namespace": self.namespace}
        if self.session and join:
            h["Memd-Session"] = self.session
        if self.agent:
            h["Memd-Agent"] = self.agent
        return h

    def _call(self, method: str, path: str, query: Optional[List[tuple]] = None,
              body: Optional[Dict[str, Any]] = None,
              headers: Optional[Dict[str, str]] = None, join: bool = True) -> Dict[str, Any]:
        if query:
            path += "?" + urllib.parse.urlencode(query)
        h = self._headers(join)
        if headers:
            h.update(headers)
        data = None
        if body is not None:
            data = json.dumps(body).encode()
            h["Content-Type"] = "application/json"
        conn = _UnixConnection(self.socket, self.timeout)
        try:
            resp = self._connected(conn, method, path, data, h)
            raw = resp.read()
        finally:
            conn.close()
        try:
            doc = json.loads(raw) if raw else {}
        except ValueError:
            raise MemdError(f"memd answered {resp.status} with a body that is not JSON",
                            status=resp.status) from None
        if resp.status >= 400:
            code = doc.get("code", "internal")
            cls = _ERRORS.get(code, MemdError)
            raise cls(doc.get("detail", f"HTTP {resp.status}"), code, resp.status, doc)
        return doc

    @staticmethod
    def _query(filters: Dict[str, Any]) -> List[tuple]:
        unknown = set(filters) - _FILTERS
        if unknown:
            raise TypeError(f"unknown filter(s): {', '.join(sorted(unknown))}")
        out: List[tuple] = []
        for k, v in filters.items():
            if v is None:
                continue
            if k == "tag" and isinstance(v, (list, tuple)):
                out.extend(("tag", t) for t in v)
            elif k == "meta" and isinstance(v, dict):
                out.extend(("meta", f"{mk}={mv}") for mk, mv in v.items())
            elif isinstance(v, bool):
                out.append((k, "true" if v else "false"))
            else:
                out.append((k, str(v)))
        return out

    @staticmethod
    def _if_match(rev: Optional[int]) -> Dict[str, str]:
        return {} if rev is None else {"If-Match": f'"{int(rev)}"'}

    # -- memories ---------------------------------------------------------

    def add(self, content: str, **fields: Any) -> AddResult:
        """Stores a memory through the write gate (``category``, ``subject``,
        ``tags``, ``scope``, ``tier``, ``pinned``, ``importance``, ``status``,
        ``confidence``, ``expires``, ``supersedes``, ``metadata`` (a dict),
        ``thread``, ``position``, ``occurred_at``)."""
        unknown = set(fields) - _FIELDS
        if unknown:
            raise TypeError(f"unknown field(s): {', '.join(sorted(unknown))}")
        body = {"content": content, **{k: v for k, v in fields.items() if v is not None}}
        d = self._call("POST", "/v1/memories", body=body)
        return AddResult(
            accepted=d.get("accepted", False), id=d.get("id"),
            deduped=d.get("deduped", False), merged_into=d.get("merged_into"),
            similar_to=d.get("similar_to"), reason=d.get("reason"),
            generation=d.get("generation", 0), proposal=d.get("proposal"),
        )

    def get(self, id: int) -> Memory:
        """One memory."""
        return Memory.from_json(self._call("GET", f"/v1/memories/{int(id)}")["memory"])

    def list(self, **filters: Any) -> List[Memory]:
        """Memories of the namespace, newest first (``limit``, ``offset`` and
        the CLI's filters: ``category``, ``subject``, ``tag`` (one or a list),
        ``scope``, ``meta`` (a dict), ``since``, ``until``, ``status``,
        ``agent``, ``tier``, ``source``…)."""
        d = self._call("GET", "/v1/memories", self._query(filters))
        return [Memory.from_json(m) for m in d["memories"]]

    def search(self, query: str, **filters: Any) -> List[Hit]:
        """Memories matching ``query``, best first (``mode``: auto, lexical,
        fuzzy, semantic, hybrid; ``limit`` and the filters of :meth:`list`)."""
        q = [("q", query)] + self._query(filters)
        d = self._call("GET", "/v1/memories", q)
        return [Hit(Memory.from_json(h), h.get("score", 0.0), h.get("matched", ""))
                for h in d["hits"]]

    def update(self, id: int, content: Optional[str] = None, rev: Optional[int] = None,
               **fields: Any) -> Memory:
        """Changes a memory. ``rev`` is the version the change is made on
        (``If-Match``): a stale one raises :class:`DriftError`."""
        unknown = set(fields) - _CHANGES
        if unknown:
            raise TypeError(f"unknown field(s): {', '.join(sorted(unknown))}")
        body = {k: v for k, v in fields.items() if v is not None}
        if content is not None:
            body["content"] = content
        d = self._call("PATCH", f"/v1/memories/{int(id)}", body=body,
                       headers=self._if_match(rev))
        return Memory.from_json(d["memory"])

    def forget(self, id: int, rev: Optional[int] = None) -> int:
        """Deletes a memory (``rev`` as for :meth:`update`); the generation
        after it."""
        d = self._call("DELETE", f"/v1/memories/{int(id)}", headers=self._if_match(rev))
        return d.get("generation", 0)

    def purge(self, id: Optional[int] = None, matching: Optional[str] = None,
              confirm: bool = False, all_namespaces: bool = False) -> Dict[str, Any]:
        """Erases memory ``id``, or every memory whose text (now or in any
        earlier version) holds ``matching``, of the client's namespace (of
        every namespace with ``all_namespaces=True``), and every trace of
        their text on the daemon's machine. Without ``confirm=True`` it only
        lists them.
        The report: ``targets``, ``purged``, ``blocks_rebuilt``,
        ``backups_rewritten``, ``not_rewritten``, ``scrubbed``."""
        if (id is None) == (matching is None):
            raise TypeError("purge takes one of id or matching")
        body: Dict[str, Any] = {"confirm": bool(confirm)}
        if all_namespaces:
            body["all_namespaces"] = True
        if id is not None:
            body["id"] = int(id)
        else:
            body["matching"] = str(matching)
        return self._call("POST", "/v1/purge", body=body)

    def history(self, id: int) -> History:
        """A memory's supersession chain and earlier versions."""
        d = self._call("GET", f"/v1/memories/{int(id)}/history")
        revisions = []
        for r in d["revisions"]:
            known = {"memory_id", "op", "rev", "content", "recorded_at"}
            revisions.append(Revision(
                memory_id=r["memory_id"], op=r["op"], rev=r.get("rev"),
                content=r.get("content"), recorded_at=r.get("recorded_at", ""),
                extra={k: v for k, v in r.items() if k not in known},
            ))
        return History([Memory.from_json(m) for m in d["chain"]], revisions,
                       d.get("generation", 0))

    def supersede(self, old: int, new: int, rev: Optional[int] = None) -> int:
        """Marks memory ``old`` as replaced by ``new`` (``rev`` as for
        :meth:`update`); the generation after it."""
        d = self._call("POST", f"/v1/memories/{int(old)}/supersede", body={"by": int(new)},
                       headers=self._if_match(rev))
        return d.get("generation", 0)

    def move_task(self, id: int, status: str, rev: Optional[int] = None) -> Memory:
        """Moves a task to ``pending``, ``in_progress``, ``completed`` or
        ``cancelled`` (``rev`` as for :meth:`update`)."""
        d = self._call("POST", f"/v1/memories/{int(id)}/task", body={"status": status},
                       headers=self._if_match(rev))
        return Memory.from_json(d["memory"])

    def confirm(self, id: int) -> Memory:
        """Counts a confirmation of a memory."""
        return Memory.from_json(self._call("POST", f"/v1/memories/{int(id)}/confirm")["memory"])

    # -- sessions, status, events ----------------------------------------

    def _session_path(self, name: Optional[str]) -> str:
        name = name or self.session
        if not name:
            raise TypeError("a named session is needed: pass name= or Client(session=...)")
        return "/v1/sessions/{}/{}".format(urllib.parse.quote(self.namespace, safe=""),
                                           urllib.parse.quote(name, safe=""))

    def inject(self, name: Optional[str] = None) -> str:
        """The memory block of the named session (``name``, else this
        client's session): the same bytes until it writes, compacts or
        refreshes."""
        return self._call("POST", self._session_path(name) + "/inject", join=False)["block"]

    def compacted(self, name: Optional[str] = None) -> None:
        """The agent compacted its context: the block is rebuilt at the next
        inject."""
        self._call("POST", self._session_path(name) + "/compacted", join=False)

    def refresh(self, name: Optional[str] = None) -> None:
        """The block is rebuilt at the next inject."""
        self._call("POST", self._session_path(name) + "/refresh", join=False)

    def end_session(self, name: Optional[str] = None) -> None:
        """Ends the named session: its block and read set are dropped."""
        self._call("DELETE", self._session_path(name), join=False)

    def sessions(self) -> List[SessionInfo]:
        """The named sessions of the namespace."""
        d = self._call("GET", "/v1/sessions", join=False)
        return [SessionInfo(s["namespace"], s["name"], s["agent"], s["has_block"])
                for s in d["sessions"]]

    def named_session(self, name: str) -> SessionInfo:
        """A named session of the namespace and the exact block it was given."""
        path = "/v1/sessions/{}/{}".format(urllib.parse.quote(self.namespace, safe=""),
                                           urllib.parse.quote(name, safe=""))
        d = self._call("GET", path, join=False)
        block = d.get("block") or {}
        return SessionInfo(d["namespace"], d["name"], d["agent"], d["has_block"],
                           block.get("text"), block.get("hash"), block.get("memories", []))

    def status(self) -> Dict[str, Any]:
        """The daemon's status (as ``memd status --json``)."""
        return self._call("GET", "/v1/status")

    def events(self) -> Iterator[Dict[str, Any]]:
        """Server-Sent Events as dicts ``{"event": name, "data": {...}}``:
        ``change`` (the generation moved), ``drift``, ``team``. Blocks; ends
        when the daemon stops."""
        conn = _UnixConnection(self.socket, None)  # type: ignore[arg-type]
        try:
            resp = self._connected(conn, "GET", "/v1/events", None, self._headers())
            name, data = "message", []
            for raw in resp:
                line = raw.decode().rstrip("\r\n")
                if not line:
                    if data:
                        yield {"event": name, "data": json.loads("\n".join(data))}
                    name, data = "message", []
                elif line.startswith("event:"):
                    name = line[6:].strip()
                elif line.startswith("data:"):
                    data.append(line[5:].strip())
        finally:
            conn.close()
