#!/usr/bin/env bash
# Set up (first time) and start the dashboard: http://localhost:8501
set -euo pipefail
cd "$(dirname "$0")/.."
WANT_APT=${WANT_APT:-dataset-fashion-mnist} ./scripts/setup.sh
exec .venv/bin/streamlit run dashboard/app.py --server.headless "${HEADLESS:-false}" \
  --browser.gatherUsageStats false "$@"
