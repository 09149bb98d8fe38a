#!/usr/bin/env bash
# Set up everything the dashboard and the tests need: system packages (Debian's
# Chromium and its headless shell for the browser tests and benchmarks, Fashion-MNIST for offline training, PostgreSQL
# for the sweep-workers test on a real database server) and the Python virtual
# environment. Safe to run again: it skips what is already there.
set -euo pipefail
cd "$(dirname "$0")/.."

PY=${PYTHON:-python3}
VENV=${VENV:-.venv}
WANT_APT=${WANT_APT:-"chromium chromium-headless-shell dataset-fashion-mnist postgresql"}

apt_install() {
  local missing=()
  for pkg in $WANT_APT; do
    dpkg -s "$pkg" >/dev/null 2>&1 || missing+=("$pkg")
  done
  [ ${#missing[@]} -eq 0 ] && return 0
  local sudo=""
  if [ "$(id -u)" -ne 0 ]; then
    if command -v sudo >/dev/null 2>&1; then sudo="sudo"; else
      echo "setup: cannot install ${missing[*]} (not root, no sudo); browser tests, offline Fashion-MNIST and the PostgreSQL sweep test need them." >&2
      return 0
    fi
  fi
  if command -v apt-get >/dev/null 2>&1; then
    echo "setup: installing system packages: ${missing[*]}"
    $sudo env DEBIAN_FRONTEND=noninteractive apt-get update -qq || true
    # Quiet unless it fails: dpkg's unpacking lines (and postgresql's cluster notes) go to a log.
    local log
    log=$(mktemp)
    if ! $sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" </dev/null >"$log" 2>&1; then
      cat "$log" >&2
      rm -f "$log"
      return 1
    fi
    rm -f "$log"
  else
    echo "setup: no apt-get; install Chromium (browser tests) and PostgreSQL (sweep test) yourself." >&2
  fi
}

[ "${SKIP_APT:-0}" = 1 ] || apt_install

if [ ! -x "$VENV/bin/python" ]; then
  echo "setup: creating $VENV"
  "$PY" -m venv "$VENV"
fi
# Reinstall only when requirements.txt changed since the last successful install.
stamp="$VENV/.requirements.sha256"
want=$(sha256sum requirements.txt | cut -d' ' -f1)
if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$want" ]; then
  echo "setup: installing Python packages (requirements.txt)"
  "$VENV/bin/python" -m pip install -q --disable-pip-version-check --upgrade pip
  "$VENV/bin/python" -m pip install -q --disable-pip-version-check -r requirements.txt
  echo "$want" > "$stamp"
fi
# `import jaxdash` (and training, dashboard, ...) from this checkout in any script run with the venv's
# Python, wherever it lives: what an editable install does, without building anything.
site=$("$VENV/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
echo "$PWD" > "$site/jax-dashboard-checkout.pth"
# The commands of pyproject.toml's [project.scripts] on the venv's PATH (.venv/bin/jaxdash, jaxdash-train),
# as `pip install` writes them.
"$VENV/bin/python" scripts/console_scripts.py "$VENV/bin"
