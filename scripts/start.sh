#!/usr/bin/env bash
# Set up (first time) and start the dashboard: http://localhost:8501, reachable from this machine only.
#
#   ./scripts/start.sh                      listen on 127.0.0.1 (the default)
#   ./scripts/start.sh --address 0.0.0.0    serve to other machines (or JAXDASH_ADDRESS=0.0.0.0);
#                                           anyone who reaches it can run code here, see README
# Other arguments go to `streamlit run` (e.g. --server.port 8502).
set -euo pipefail
cd "$(dirname "$0")/.."

address=${JAXDASH_ADDRESS:-127.0.0.1}
port=8501
args=()
while [ $# -gt 0 ]; do
  case "$1" in
    --address) [ $# -ge 2 ] || { echo "start.sh: --address needs a value, e.g. --address 0.0.0.0" >&2; exit 2; }
               address=$2; shift 2 ;;
    --address=*) address=${1#--address=}; shift ;;
    --server.port) [ $# -ge 2 ] || { echo "start.sh: --server.port needs a value, e.g. --server.port 8502" >&2; exit 2; }
                   port=$2; args+=("$1" "$2"); shift 2 ;;
    --server.port=*) port=${1#--server.port=}; args+=("$1"); shift ;;
    --server.address|--server.address=*)
      echo "start.sh: use --address ADDRESS (or JAXDASH_ADDRESS) to choose where the dashboard listens" >&2; exit 2 ;;
    *) args+=("$1"); shift ;;
  esac
done
[ -n "$address" ] || { echo "start.sh: the address is empty; use 127.0.0.1, or 0.0.0.0 to serve to others" >&2; exit 2; }

case "$address" in
  127.*|localhost|::1) ;;
  *) cat >&2 <<EOF
WARNING: serving the dashboard on $address. Anyone who can reach this address can start, stop
and delete training runs, which means running code on this machine as $(id -un). Do this only
on a network you trust, or put an authenticating proxy in front of it (see README).
EOF
  ;;
esac

cmd=(.venv/bin/streamlit run dashboard/server_app.py --server.headless "${HEADLESS:-false}"
  --server.address "$address" --server.enableXsrfProtection true
  --browser.gatherUsageStats false ${args[@]+"${args[@]}"})
if [ -n "${JAXDASH_START_DRY_RUN:-}" ]; then  # the tests: print the command instead of running it
  printf '%s\n' "${cmd[@]}"
  exit 0
fi
WANT_APT=${WANT_APT:-dataset-fashion-mnist} ./scripts/setup.sh
# On its first start Streamlit asks for an e-mail address and waits for Enter before it serves (with no
# terminal, for ever). Give the answer Enter gives, as Streamlit itself would save it, unless there is one.
creds="${HOME:-/root}/.streamlit/credentials.toml"
[ -e "$creds" ] || { mkdir -p "$(dirname "$creds")" && printf '[general]\nemail = ""\n' > "$creds"; }
# Streamlit's own start lines are off (.streamlit/config.toml): say where the page is and where runs go.
runs=$(.venv/bin/python -c 'from runstore import run_store; print(run_store.runs_root())')
echo "Dashboard: http://$address:$port (runs in $runs; Ctrl+C stops it)" >&2
exec "${cmd[@]}"
