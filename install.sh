#!/bin/sh
# Installs memd from a release archive: no Rust toolchain, no root.
#
#   curl -fsSL https://github.com/memd-dev/memd/releases/latest/download/install.sh | sh
#   sh install.sh [--base-url URL|DIR] [--prefix DIR] [--target TRIPLE]
#
# It picks the archive for this machine from the release's SHA256SUMS,
# downloads it, refuses it unless its SHA-256 is the one listed, checks that
# this machine's glibc is new enough, and installs into PREFIX (default
# ~/.local): bin/memd, the man pages, the bash, zsh and fish completions and
# the systemd user units (not enabled; launchd's agent on macOS). A memd
# daemon of another build that is running is stopped (the next memd command
# starts the new one), and it says so. Nothing outside PREFIX is written.
#
#   --base-url URL|DIR  where the release's files are: an http(s) or file://
#                       URL, or a local directory (MEMD_INSTALL_BASE_URL)
#   --prefix DIR        install into DIR/bin, DIR/share (MEMD_INSTALL_PREFIX)
#   --target TRIPLE     the archive's target (default: this machine's)
set -eu

base_url=${MEMD_INSTALL_BASE_URL:-https://github.com/memd-dev/memd/releases/latest/download}
prefix=${MEMD_INSTALL_PREFIX:-}
target=""

say() {
    printf 'memd-install: %s\n' "$*"
}

die() {
    printf 'memd-install: error: %s\n' "$*" >&2
    exit 1
}

while [ $# -gt 0 ]; do
    case "$1" in
    --base-url)
        [ $# -ge 2 ] || die "--base-url needs a URL or a directory"
        base_url=$2
        shift 2
        ;;
    --base-url=*)
        base_url=${1#--base-url=}
        shift
        ;;
    --prefix)
        [ $# -ge 2 ] || die "--prefix needs a directory"
        prefix=$2
        shift 2
        ;;
    --prefix=*)
        prefix=${1#--prefix=}
        shift
        ;;
    --target)
        [ $# -ge 2 ] || die "--target needs a target triple"
        target=$2
        shift 2
        ;;
    -h | --help)
        sed -n '2,19p' "$0" 2>/dev/null | sed 's/^# \{0,1\}//'
        exit 0
        ;;
    *) die "unknown argument $1 (sh install.sh --help)" ;;
    esac
done

if [ -z "$prefix" ]; then
    [ -n "${HOME:-}" ] || die "HOME is not set: give --prefix"
    prefix="$HOME/.local"
fi
case "$prefix" in
/*) ;;
*) prefix="$(pwd)/$prefix" ;;
esac
base_url=${base_url%/}

# The archive for this machine.
os=$(uname -s)
if [ -z "$target" ]; then
    machine=$(uname -m)
    case "$os/$machine" in
    Linux/x86_64 | Linux/amd64) target=x86_64-unknown-linux-gnu ;;
    Linux/aarch64 | Linux/arm64) target=aarch64-unknown-linux-gnu ;;
    Darwin/x86_64) target=x86_64-apple-darwin ;;
    Darwin/arm64 | Darwin/aarch64) target=aarch64-apple-darwin ;;
    *) die "no release archive for $os on $machine: build memd from source (cargo install memd-daemon)" ;;
    esac
fi

tmp=$(mktemp -d "${TMPDIR:-/tmp}/memd-install.XXXXXX")
trap 'rm -rf "$tmp"' EXIT INT TERM

# fetch NAME: the release file NAME into $tmp/NAME.
fetch() {
    case "$base_url" in
    http://* | https://*)
        if command -v curl >/dev/null 2>&1; then
            curl --proto '=https,http' -fsSL "$base_url/$1" -o "$tmp/$1" ||
                die "cannot download $base_url/$1"
        elif command -v wget >/dev/null 2>&1; then
            wget -q -O "$tmp/$1" "$base_url/$1" || die "cannot download $base_url/$1"
        else
            die "neither curl nor wget is installed"
        fi
        ;;
    file://*)
        cp "${base_url#file://}/$1" "$tmp/$1" 2>/dev/null || die "no $1 in ${base_url#file://}"
        ;;
    *)
        cp "$base_url/$1" "$tmp/$1" 2>/dev/null || die "no $1 in $base_url"
        ;;
    esac
}

sha256() {
    if command -v sha256sum >/dev/null 2>&1; then
        sha256sum "$1" | awk '{print $1}'
    elif command -v shasum >/dev/null 2>&1; then
        shasum -a 256 "$1" | awk '{print $1}'
    elif command -v openssl >/dev/null 2>&1; then
        openssl dgst -sha256 "$1" | awk '{print $NF}'
    else
        die "no sha256sum, shasum or openssl to check the download with: refusing to install it unchecked"
    fi
}

fetch SHA256SUMS
line=$(grep -E "[ *]memd-[^ ]+-$target\.tar\.gz\$" "$tmp/SHA256SUMS" | tail -n 1 || true)
[ -n "$line" ] || die "$base_url has no archive for $target (its SHA256SUMS lists: $(awk '{print $2}' "$tmp/SHA256SUMS" | tr '\n' ' '))"
expected=$(printf '%s\n' "$line" | awk '{print $1}')
archive=$(printf '%s\n' "$line" | awk '{print $2}' | sed 's/^\*//')
say "downloading $archive from $base_url"
fetch "$archive"
actual=$(sha256 "$tmp/$archive")
if [ "$actual" != "$expected" ]; then
    die "checksum mismatch for $archive: SHA256SUMS says $expected, the download is $actual. Refusing to install it (nothing was changed): the file is damaged or not the one published."
fi
say "checksum verified (SHA-256 $actual)"

mkdir "$tmp/x"
gzip -dc "$tmp/$archive" | (cd "$tmp/x" && tar -xf -) || die "cannot unpack $archive"
dir="$tmp/x/${archive%.tar.gz}"
[ -x "$dir/bin/memd" ] || die "$archive holds no bin/memd"

# glibc: the archive states the oldest it runs on.
needed=$(sed -n 's/^glibc: \([0-9][0-9.]*\) or newer.*/\1/p' "$dir/PLATFORM" 2>/dev/null || true)
if [ -n "$needed" ]; then
    have=$(getconf GNU_LIBC_VERSION 2>/dev/null | awk '{print $2}' || true)
    if [ -z "$have" ]; then
        die "memd's Linux archive needs glibc $needed or newer, and this machine's C library is not glibc (musl?): build memd from source (cargo install memd-daemon)"
    fi
    older=$(printf '%s\n%s\n' "$have" "$needed" | sort -t. -k1,1n -k2,2n -k3,3n | head -n 1)
    if [ "$older" != "$needed" ]; then
        die "$archive needs glibc $needed or newer; this machine has $have: build memd from source (cargo install memd-daemon)"
    fi
fi
build=$("$dir/bin/memd" --version 2>&1) || die "the archive's memd does not run here: $build"
build=${build#memd }

# Copy a file into place through a temporary name in the same directory
# (a running daemon keeps the binary it started from).
put() { # $1: source, $2: destination, $3: mode
    mkdir -p "$(dirname "$2")"
    cp "$1" "$2.new.$$"
    chmod "$3" "$2.new.$$"
    mv -f "$2.new.$$" "$2"
    printf '%s\n' "$2" >>"$tmp/installed"
}

bin="$prefix/bin/memd"
share="$prefix/share"
: >"$tmp/installed"
put "$dir/bin/memd" "$bin" 0755
for page in "$dir"/share/man/man1/*.1; do
    put "$page" "$share/man/man1/$(basename "$page")" 0644
done
put "$dir/share/bash-completion/completions/memd" "$share/bash-completion/completions/memd" 0644
put "$dir/share/zsh/site-functions/_memd" "$share/zsh/site-functions/_memd" 0644
put "$dir/share/fish/vendor_completions.d/memd.fish" "$share/fish/vendor_completions.d/memd.fish" 0644

# The service files name the binary just installed.
case "$os" in
Darwin)
    escaped=$(printf '%s' "$bin" | sed 's/&/\&amp;/g; s/</\&lt;/g; s/>/\&gt;/g; s/[|\\]/\\&/g')
    logs=$(printf '%s' "$HOME/Library/Logs/memd.log" | sed 's/&/\&amp;/g; s/</\&lt;/g; s/>/\&gt;/g; s/[|\\]/\\&/g')
    sed -e "s|<string>/usr/local/bin/memd</string>|<string>$escaped</string>|" \
        -e "s|<string>/Users/YOU/Library/Logs/memd.log</string>|<string>$logs</string>|" \
        "$dir/share/launchd/dev.memd.memd.plist" >"$tmp/dev.memd.memd.plist"
    put "$tmp/dev.memd.memd.plist" "$share/launchd/dev.memd.memd.plist" 0644
    ;;
*)
    # systemd reads user units from PREFIX/share/systemd/user for ~/.local,
    # /usr/local and /usr. A path is one word: % is doubled, and a path with
    # blanks is quoted.
    word=$(printf '%s' "$bin" | sed 's/%/%%/g')
    case "$word" in
    *[[:space:]]*) word="\"$word\"" ;;
    esac
    word=$(printf '%s' "$word" | sed 's/[|&\\]/\\&/g')
    sed "s|^ExecStart=[^ ]*memd |ExecStart=$word |" "$dir/share/systemd/user/memd.service" >"$tmp/memd.service"
    put "$tmp/memd.service" "$share/systemd/user/memd.service" 0644
    put "$dir/share/systemd/user/memd.socket" "$share/systemd/user/memd.socket" 0644
    ;;
esac
for doc in README.md CHANGELOG.md LICENSE-MIT LICENSE-APACHE PLATFORM; do
    put "$dir/$doc" "$share/doc/memd/$doc" 0644
done
printf '%s\n' "$share/doc/memd/installed-files" >>"$tmp/installed"
cp "$tmp/installed" "$share/doc/memd/installed-files"
say "installed memd $build into $bin"

# A daemon of another build is stopped: the hooks and commands that now run
# this binary would otherwise meet an older daemon (or another protocol).
status=$("$bin" status --json --no-autostart 2>/dev/null) && answered=yes || answered=no
if [ "$answered" = yes ]; then
    theirs=$(printf '%s\n' "$status" | sed -n 's/.*"build":"\([^"]*\)".*/\1/p')
    # A daemon older than the build line reports its version only.
    [ -n "$theirs" ] || theirs=$(printf '%s\n' "$status" | sed -n 's/.*"version":"\([^"]*\)".*/\1/p')
    pid=$(printf '%s\n' "$status" | sed -n 's/.*"pid":\([0-9]*\).*/\1/p')
    if [ "$theirs" != "$build" ]; then
        if "$bin" stop --no-autostart >/dev/null 2>&1; then
            say "stopped the running memd daemon (pid $pid, memd $theirs): the next memd command starts this one"
        else
            say "warning: a memd daemon of another build is running (pid $pid, memd $theirs) and did not stop: run memd stop"
        fi
    fi
elif printf '%s\n' "$status" | grep -q '"code":"protocol_mismatch"'; then
    # It speaks another protocol than this binary: stopped by its pid (the
    # first line of its lock file), with SIGTERM, memd's graceful stop.
    data=${MEMD_DATA_DIR:-${XDG_DATA_HOME:-$HOME/.local/share}/memd}
    pid=$(head -n 1 "$data/memd.lock" 2>/dev/null || true)
    case "$pid" in
    '' | *[!0-9]*)
        say "warning: a memd daemon that speaks another protocol is running, and $data/memd.lock names no pid: stop it with the memd that started it (memd stop)"
        ;;
    *)
        kill -TERM "$pid" 2>/dev/null || true
        waited=0
        while kill -0 "$pid" 2>/dev/null && [ "$waited" -lt 15 ]; do
            sleep 1
            waited=$((waited + 1))
        done
        if kill -0 "$pid" 2>/dev/null; then
            say "warning: the running memd daemon (pid $pid, another protocol) did not stop in 15 s: stop it with the memd that started it (memd stop)"
        else
            say "stopped the running memd daemon (pid $pid), which speaks another protocol than this memd: the next memd command starts this one"
        fi
        ;;
    esac
fi
service="${XDG_CONFIG_HOME:-$HOME/.config}/systemd/user/memd.service"
if [ -f "$service" ]; then
    exec_line=$(grep '^ExecStart=' "$service" || true)
    case "$exec_line" in
    "ExecStart=$bin "* | "ExecStart=\"$bin\" "*) ;;
    *) say "your user service ($service) runs another memd binary: memd service install points it at this one" ;;
    esac
fi

case ":${PATH:-}:" in
*":$prefix/bin:"*)
    found=$(command -v memd 2>/dev/null || true)
    if [ -n "$found" ] && [ "$found" != "$bin" ]; then
        say "note: $found comes before $bin on your PATH: remove it, or put $prefix/bin first"
    fi
    ;;
*)
    say "$prefix/bin is not on your PATH; add it in ~/.profile (or your shell's rc file):"
    say "    export PATH=\"$prefix/bin:\$PATH\""
    ;;
esac
say "zsh completions: fpath+=($share/zsh/site-functions) before compinit in ~/.zshrc"
say "next: memd setup claude-code   (its hooks and tools in Claude Code; or: memd setup codex, memd setup gemini)"
