#!/usr/bin/env bash
# Idempotent set-up for dbstudies on Debian 12 (as root):
#   1. apt packages: the servers' (env/servers/*.toml `apt`), sysbench, tools;
#   2. .venv/ from environment.yml's pinned pip list, with dbstudies installed editable;
#   3. the Jupyter kernel "dbstudies" inside .venv (papermill and JupyterLab use it).
# Re-running it does nothing that is already done.
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-python3}
VENV=.venv

say() { printf 'setup: %s\n' "$*"; }

# -- 1. apt packages
packages=(sysbench util-linux procps chromium mmdebstrap bubblewrap zstd linux-perf openssl valgrind)  # valgrind: the instruction count (`count`); openssl: the sweep cluster's certificates; chromium: report screenshots in the tests; mmdebstrap, bubblewrap, zstd: rootfs flavours; linux-perf: on-CPU profiles (cpu_profile)
for f in env/servers/*.toml; do
  packages+=($(sed -n 's/^apt *= *\[\(.*\)\]/\1/p' "$f" | tr -d '",'))
done
if ! "$PYTHON" -c 'import venv, ensurepip' 2>/dev/null; then
  packages+=(python3-venv python3-pip)
fi
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  if [ "$(id -u)" != 0 ]; then
    echo "setup: missing apt packages: ${missing[*]} (run as root, or install them)" >&2
    exit 1
  fi
  say "installing apt packages: ${missing[*]}"
  apt-get update -q
  DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${missing[@]}"
fi

# -- 2. the venv
requirements=$(sed -n '/^ *- pip:/,$p' environment.yml | grep -E '^ +- [A-Za-z0-9_.-]+==' | sed -E 's/^ +- //')
if [ -z "$requirements" ]; then
  echo "setup: found no pinned packages (name==version) under '- pip:' in environment.yml" >&2
  exit 1
fi
# Installed as dependencies but left out: rfc3987-syntax (jsonschema's optional IRI format check,
# pulled in by jupyter-events' extra) compiles 38 Lark grammars whenever nbformat is imported —
# 0.6 s of every `dbstudies run`/`report`, papermill, nbval and JupyterLab process here; nothing we
# run validates IRIs, and `pip check` stays clean without it.
DROPPED=(rfc3987-syntax)
stamp=$( (echo "$requirements"; echo "dropped: ${DROPPED[*]}"; cat pyproject.toml; "$PYTHON" --version) | sha256sum | cut -c1-16)
if [ -x "$VENV/bin/python" ] && [ "$(cat "$VENV/.dbstudies-stamp" 2>/dev/null)" = "$stamp" ]; then
  say ".venv is up to date"
else
  say "building .venv from environment.yml ($(echo "$requirements" | wc -l) pinned packages)"
  [ -x "$VENV/bin/python" ] || "$PYTHON" -m venv "$VENV"
  echo "$requirements" > "$VENV/requirements.txt"
  "$VENV/bin/pip" install -q --disable-pip-version-check -r "$VENV/requirements.txt"
  "$VENV/bin/pip" install -q --disable-pip-version-check --no-deps -e .
  "$VENV/bin/pip" uninstall -q -y "${DROPPED[@]}" 2>/dev/null || true
  "$VENV/bin/python" -m ipykernel install --sys-prefix --name dbstudies --display-name "dbstudies" >/dev/null
  echo "$stamp" > "$VENV/.dbstudies-stamp"
  say ".venv ready"
fi
