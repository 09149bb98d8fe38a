"""Console scripts of an installed jax-dashboard (`pip install .`), like `tensorboard --logdir`.

    jaxdash [--runs DIR] [--logdir DIR] [--port 8501] [--address 127.0.0.1] [streamlit options ...]
    jaxdash runs --filter 'config.lr < 0.01'          # the runs a query selects (jaxdash/runs_cli.py)
    jaxdash-train regression --steps 50               # the same as `python -m training ...`

`jaxdash` execs `streamlit run <installed dashboard/server_app.py>` (the pages and the CSV route) with $JAXDASH_RUNS set to the runs
folder (made absolute: the page starts training processes from the installed package's folder).
The current directory goes on PYTHONPATH and relative `path/file.py:Class` specs in $JAXDASH_TASKS
are made absolute, so the page finds your tasks as `python -m training` does from here.
Part of the `jaxdash` package (see pyproject.toml).
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import sys
from pathlib import Path

from runstore import run_store

LOOPBACK = ("127.", "localhost", "::1")


def app_path() -> Path:
    """dashboard/server_app.py of the `dashboard` package Python imports (installed or the checkout)."""
    spec = importlib.util.find_spec("dashboard")  # finds it without importing Streamlit
    if spec is None or spec.origin is None:
        raise SystemExit("jaxdash: the dashboard package is not installed (pip install jax-dashboard)")
    return Path(spec.origin).parent / "server_app.py"


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="jaxdash",
        description="Start the JAX training dashboard on a runs folder (a Streamlit server).",
        epilog="Other arguments go to `streamlit run` (e.g. --server.headless true). "
        "Train from a shell with `jaxdash-train TASK --help`.",
    )
    p.add_argument(
        "--runs",
        type=Path,
        default=None,
        help="folder of run directories to show and write (default: $JAXDASH_RUNS, else "
        "$XDG_DATA_HOME/jaxdash/runs, i.e. ~/.local/share/jaxdash/runs: where jaxdash.init writes by default)",
    )
    p.add_argument(
        "--logdir",
        type=Path,
        default=Path(os.environ["JAXDASH_LOGDIR"]) if os.environ.get("JAXDASH_LOGDIR") else None,
        help="also show every TensorBoard run under this folder (tensorboardX, TF, Flax/CLU), read live "
        "(default: $JAXDASH_LOGDIR)",
    )
    p.add_argument("--port", type=int, default=8501, help="port to listen on (default: 8501)")
    p.add_argument(
        "--address",
        default=os.environ.get("JAXDASH_ADDRESS") or "127.0.0.1",
        help="address to listen on (default: 127.0.0.1, this machine only). Anyone who can reach "
        "the page can start training processes, i.e. run code here: use 0.0.0.0 only on a trusted network",
    )
    p.add_argument("--print-command", action="store_true", help="print the streamlit command and exit")
    return p


def _absolute_specs(specs: str) -> str:
    out = []
    for spec in filter(None, (s.strip() for s in specs.split(","))):
        module, sep, cls = spec.partition(":")
        if module.endswith(".py") or "/" in module:
            spec = f"{Path(module).resolve()}{sep}{cls}"
        out.append(spec)
    return ",".join(out)


def command(argv: list[str] | None = None) -> tuple[list[str], dict[str, str]]:
    """The `streamlit run` command line and environment for `jaxdash ARGS`."""
    args, rest = parser().parse_known_args(argv)
    runs = run_store.runs_root(args.runs)
    env = dict(os.environ, JAXDASH_RUNS=str(runs))
    if args.logdir is not None:
        if not args.logdir.expanduser().is_dir():
            raise SystemExit(f"jaxdash: --logdir {args.logdir}: not a folder; give the folder TensorBoard reads")
        env["JAXDASH_LOGDIR"] = str(args.logdir.expanduser().resolve())
    env["PYTHONPATH"] = os.pathsep.join(filter(None, (os.getcwd(), env.get("PYTHONPATH"))))
    if env.get("JAXDASH_TASKS"):
        env["JAXDASH_TASKS"] = _absolute_specs(env["JAXDASH_TASKS"])
    cmd = [
        sys.executable,
        "-m",
        "streamlit",
        "run",
        str(app_path()),
        "--server.address",
        args.address,
        "--server.port",
        str(args.port),
        "--server.enableXsrfProtection",
        "true",
        "--browser.gatherUsageStats",
        "false",
        "--server.fileWatcherType",  # as the repository's .streamlit/config.toml: see there
        "none",
        "--runner.postScriptGC",
        "false",
        "--client.toolbarMode",  # no Deploy button, no first-open popup: see .streamlit/config.toml
        "minimal",
        "--logger.hideWelcomeMessage",
        "true",
        *rest,
    ]
    return cmd, env


def skip_email_prompt() -> None:
    """On its first start Streamlit asks for an e-mail address and waits for Enter before it serves (with no
    terminal, for ever): save the answer Enter gives, as Streamlit would, unless there is one."""
    creds = Path.home() / ".streamlit" / "credentials.toml"
    if not creds.exists():
        creds.parent.mkdir(parents=True, exist_ok=True)
        creds.write_text('[general]\nemail = ""\n')


def main(argv: list[str] | None = None) -> None:
    """`jaxdash`: exec the Streamlit server (this process becomes it); `jaxdash runs ...` lists runs instead."""
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["runs"]:
        from jaxdash import runs_cli  # only this subcommand reads the run index

        sys.exit(runs_cli.main(argv[1:]))
    args = parser().parse_known_args(argv)[0]
    cmd, env = command(argv)
    if args.print_command:
        print(" ".join(cmd))
        return
    if not args.address.startswith(LOOPBACK):
        print(
            f"WARNING: serving the dashboard on {args.address}: anyone who can reach it can start, stop and "
            "delete training runs, which means running code on this machine.",
            file=sys.stderr,
        )
    Path(env["JAXDASH_RUNS"]).mkdir(parents=True, exist_ok=True)
    skip_email_prompt()
    print(f"jaxdash: runs in {env['JAXDASH_RUNS']}; open http://{args.address}:{args.port}", file=sys.stderr)
    sys.stdout.flush()
    os.execve(sys.executable, cmd, env)


def train() -> None:
    """`jaxdash-train`: `python -m training` (the same arguments and exit codes)."""
    from training.__main__ import main as training_main

    try:
        sys.exit(training_main())
    except KeyboardInterrupt:  # a signal before the run installed its handlers: no traceback
        sys.exit(130)


if __name__ == "__main__":
    main()
