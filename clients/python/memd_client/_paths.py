"""Where the daemon is and which namespace a client is in, found as the
``memd`` CLI finds them (memd's README, "Files" and "Project namespace")."""

from __future__ import annotations

import hashlib
import os
import re
from pathlib import Path
from typing import Optional

try:  # Python 3.11+
    import tomllib as _toml
except ImportError:  # pragma: no cover - older Pythons read no config file
    _toml = None  # type: ignore[assignment]


def _env(name: str) -> Optional[str]:
    v = os.environ.get(name)
    return v if v else None


def _home() -> Path:
    return Path(_env("HOME") or "/")


def data_dir() -> Path:
    """``MEMD_DATA_DIR``, else ``$XDG_DATA_HOME/memd``, else
    ``~/.local/share/memd``."""
    d = _env("MEMD_DATA_DIR")
    if d:
        return Path(d).absolute()
    xdg = _env("XDG_DATA_HOME")
    return (Path(xdg) if xdg else _home() / ".local" / "share") / "memd"


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def socket() -> str:
    """``MEMD_SOCKET``; else the socket the running daemon of the data dir
    serves (its lock file names it); else memd's default: the data dir's
    when ``MEMD_DATA_DIR`` is set, ``$XDG_RUNTIME_DIR/memd/memd.sock``, or
    the data dir's."""
    s = _env("MEMD_SOCKET")
    if s:
        return str(Path(s).absolute())
    d = data_dir()
    try:
        lines = (d / "memd.lock").read_text().splitlines()
        if len(lines) >= 2 and lines[1].strip() and _alive(int(lines[0].strip())):
            return lines[1].strip()
    except (OSError, ValueError):
        pass
    if _env("MEMD_DATA_DIR") is None and _env("XDG_RUNTIME_DIR"):
        return str(Path(_env("XDG_RUNTIME_DIR")) / "memd" / "memd.sock")  # type: ignore[arg-type]
    return str(d / "memd.sock")


def _config_path() -> Path:
    c = _env("MEMD_CONFIG")
    if c:
        return Path(c)
    xdg = _env("XDG_CONFIG_HOME")
    return (Path(xdg) if xdg else _home() / ".config") / "memd" / "config.toml"


def _toml_file(path: Path) -> Optional[dict]:
    if _toml is None:
        return None
    try:
        with open(path, "rb") as f:
            return _toml.load(f)
    except (OSError, ValueError):
        return None


def fnv1a64(text: str) -> str:
    """FNV-1a 64 of ``text``'s UTF-8 bytes, 16 hex digits (memd's hash)."""
    h = 0xCBF29CE484222325
    for b in text.encode():
        h ^= b
        h = (h * 0x100000001B3) & 0xFFFFFFFFFFFFFFFF
    return f"{h:016x}"


def _namespace_name(name: str, identity: str) -> str:
    cleaned = "".join(
        c if (c.isascii() and c.isalnum()) or c in "._-" else "-" for c in name.lower()
    )
    return f"{cleaned or 'root'}-{fnv1a64(identity)[:8]}"


def _git_root(start: Path) -> Optional[Path]:
    try:
        d = start.resolve()
    except OSError:
        return None
    for p in [d, *d.parents]:
        if (p / ".git").exists():
            return p
    return None


def _common_git_dir(root: Path) -> Optional[Path]:
    dot_git = root / ".git"
    if dot_git.is_dir():
        git_dir = dot_git
    else:
        try:
            text = dot_git.read_text().strip()
        except OSError:
            return None
        if not text.startswith("gitdir:"):
            return None
        git_dir = root / text[len("gitdir:"):].strip()
    try:
        common = git_dir / (git_dir / "commondir").read_text().strip()
    except OSError:
        common = git_dir
    try:
        return common.resolve(strict=True)
    except OSError:
        return None


def normalize_url(url: str, root: Path) -> Optional[str]:
    """An ``origin`` URL as one text for every way of writing it (https,
    ssh and scp-like forms agree; a local path is made absolute)."""
    url = url.strip()
    if not url:
        return None
    if "://" in url:
        scheme, rest = url.split("://", 1)
        scheme = scheme.lower()
    else:
        scheme, rest = None, url
    if scheme == "file":
        local = True
    elif scheme is not None:
        local = False
    else:
        local = ":" not in rest.split("/", 1)[0]
    if local:
        p = Path(rest)
        if not p.is_absolute():
            p = root / p
        try:
            text = str(p.resolve(strict=True))
        except OSError:
            text = str(p)
    else:
        if "@" in rest:
            rest = rest.rsplit("@", 1)[1]
        if scheme is not None:
            host, _, path = rest.partition("/")
        else:
            host, _, path = rest.partition(":")
        host = host.split(":", 1)[0]
        text = f"{host}/{path.lstrip('/')}"
    text = text.rstrip("/")
    if text.endswith(".git"):
        text = text[: -len(".git")]
    return text.rstrip("/").lower()


def _origin(common: Path, root: Path) -> Optional[str]:
    try:
        config = (common / "config").read_text()
    except OSError:
        return None
    in_origin = False
    for line in config.splitlines():
        line = line.strip()
        if line.startswith("["):
            section = re.sub(r"\s", "", line)
            in_origin = section.lower() == '[remote"origin"]'
            continue
        if in_origin and "=" in line:
            key, value = line.split("=", 1)
            if key.strip().lower() == "url":
                return normalize_url(value.strip().strip('"'), root)
    return None


def _trusted(file: Path) -> bool:
    """Whether ``memd trust`` recorded ``file`` with its present content:
    a record in ``$XDG_DATA_HOME/memd/trusted/`` named by the SHA-256 of
    the file's path (its directory canonical), holding the SHA-256 of the
    content and the path; the record and its directory this user's alone."""
    try:
        content = file.read_bytes()
        key = str(file.parent.resolve(strict=True) / file.name)
    except OSError:
        return False
    xdg = _env("XDG_DATA_HOME")
    store = (Path(xdg) if xdg else _home() / ".local" / "share") / "memd" / "trusted"
    record = store / hashlib.sha256(os.fsencode(key)).hexdigest()
    try:
        for p in (store, record):
            st = os.lstat(p)
            if st.st_uid != os.geteuid() or st.st_mode & 0o022:
                return False
        text = record.read_text()
    except OSError:
        return False
    sha, _, path = text.partition("\n")
    return path.rstrip("\n") == key and sha == hashlib.sha256(content).hexdigest()


def project_namespace(directory: Path) -> Optional[str]:
    """The namespace of the git project that holds ``directory``, as the
    CLI finds it: the ``namespace`` of ``.memd.toml`` at its root when the
    person trusted that file (``memd trust``), else derived: the
    repository's normalised ``origin`` (``github.com/acme/api``), or for a
    repository without one (or a local path as its origin) its name, a
    ``-`` and 8 hex digits of a hash of its identity; ``None`` outside a git
    work tree."""
    root = _git_root(directory)
    if root is None:
        return None
    common = _common_git_dir(root)
    origin = _origin(common, root) if common else None
    if origin:
        identity = origin
    elif common:
        identity = str(common)
    else:
        identity = str(root)
    if origin and not origin.startswith("/"):
        derived = origin
    else:
        parts = [p for p in re.split(r"[/:]", identity.rstrip("/")) if p and p != ".git"]
        name = parts[-1] if parts else ""
        if name.endswith(".git"):
            name = name[: -len(".git")]
        derived = _namespace_name(name, identity)
    f = _toml_file(root / ".memd.toml")
    named = f.get("namespace") if f else None
    if isinstance(named, str) and named.strip() and (named == derived or _trusted(root / ".memd.toml")):
        return named
    return derived


def namespace(directory: Path) -> str:
    """``MEMD_NAMESPACE``, else ``[client] namespace`` of the config file,
    else the project's (see :func:`project_namespace`), else ``default``."""
    ns = _env("MEMD_NAMESPACE")
    if ns:
        return ns
    cfg = _toml_file(_config_path())
    if cfg:
        client = cfg.get("client")
        if isinstance(client, dict):
            v = client.get("namespace")
            if isinstance(v, str) and v.strip():
                return v
    return project_namespace(directory) or "default"
