"""Run data is text on every page, never markdown (#50, item 6).

A run's files and its peers write the strings the pages show: a damaged run's message (status.json's
`final` keys), a failed run's message, its W&B sync command, mode and error, and the machine names and
messages of hosts.json. Streamlit draws st.markdown, st.caption, st.error and the rest, st.table's cells
and widget labels as GitHub-flavoured markdown, where `[ok](http://evil.example)` is a link whose text hides
its host, a bare `http://evil.example`, `www.evil.example` or `a@evil.example` becomes one after the escapes
are resolved, and backticks close the code span they were put in. The pages draw such text through
dashboard/panels/safe_text.py: shown as written, no link.
"""

from __future__ import annotations

import json
import re
import time
from pathlib import Path
from typing import Any

import pytest

from dashboard.panels import safe_text
from runstore import run_folder, run_store
from runstore.run_folder import RunFolder
from tests.apptest_pages import app, fake_run

LINK = "[ok](http://evil.example)"
HOSTILE = f"{LINK} www.evil.example ops@evil.example :smile:"
CODE_BREAK = "`` [x](http://evil.example) ``"  # closes a code span of two backticks, then a link
# What GitHub-flavoured markdown makes a link of: [text](url) whose "]" is not escaped, <url>, and the
# autolinks Streamlit's remark-gfm finds in the text once the escapes are resolved.
_MD_LINK = re.compile(r"(?<!\\)\]\(|(?<!\\)<(?:https?:|mailto:|[^\s>]+@)")
_AUTOLINK = re.compile(r"(?i)https?://|www\.[\w-]|[\w.+-]@[\w-]+\.")


def links_in(body: str) -> list[str]:
    """The links Streamlit's markdown would draw in `body` (escapes resolved for the autolinks), outside code."""
    outside_code = re.sub(r"(?<!`)(`+)(?!`).*?(?<!`)\1(?!`)", " ", body, flags=re.DOTALL)
    resolved = re.sub(r"\\(.)", r"\1", outside_code, flags=re.DOTALL)
    return _MD_LINK.findall(outside_code) + _AUTOLINK.findall(resolved)


def shown_text(body: str) -> str:
    """The text a markdown body shows (escapes resolved, invisible word joiners dropped)."""
    return re.sub(r"\\(.)", r"\1", body.replace("\u2060", ""), flags=re.DOTALL)


def code_spans(body: str) -> list[str]:
    """The text of each inline code span of `body` (CommonMark: a fence of n backticks closed by n)."""
    return [m.group(2).strip() for m in re.finditer(r"(?<!`)(`+)(?!`)(.*?)(?<!`)\1(?!`)", body, flags=re.DOTALL)]


def _bodies(at: Any) -> list[tuple[str, str]]:
    """(kind, markdown body) of every element the page drew as markdown (st.table's cells included)."""
    out = []
    for kind in ("markdown", "caption", "error", "warning", "info", "success", "subheader", "title"):
        out += [(kind, str(e.value)) for e in getattr(at, kind)]
    for table in at.table:
        out += [("table", str(v)) for v in table.value.to_numpy().ravel()]
    return out


def _damaged_run(root: Path) -> Path:
    """A run whose status.json's `final` holds a key with a string value: damaged, the key in its message."""
    d = fake_run(root, "regression", "finished", name="damaged-run")
    doc = run_store.read_json(d / run_folder.STATUS, {})
    doc["final"] = {HOSTILE: "not a number"}
    (d / run_folder.STATUS).write_text(json.dumps(doc))
    return d


def _failed_run(root: Path, name: str, wandb: dict[str, str]) -> Path:
    """A failed run with a hostile message, W&B fields and hosts.json (machine names and messages)."""
    d = fake_run(root, "regression", "failed", name=name, message=HOSTILE)
    RunFolder(d).write_status(wandb=wandb)
    now = time.time()
    RunFolder(d).write_hosts(2, [
        {"process": 0, "host": HOSTILE, "pid": 2**22 + 1, "state": "failed", "message": HOSTILE, "seen": now},
        {"process": 1, "host": "www.evil.example", "pid": 2**22 + 2, "state": "crashed", "message": LINK, "seen": now},
    ])  # fmt: skip
    return d


@pytest.fixture
def hostile_runs(root: Path) -> dict[str, str]:
    return {
        "damaged": _damaged_run(root).name,
        "sync": _failed_run(
            root, "sync-run", {"mode": "offline", "sync_command": f"wandb sync {CODE_BREAK}", "error": HOSTILE}
        ).name,  # fmt: skip
        "mode": _failed_run(root, "mode-run", {"mode": HOSTILE, "error": HOSTILE}).name,
    }


def _assert_text(at: Any, *wanted: str) -> list[tuple[str, str]]:
    """No element's markdown draws a link, and each of `wanted` is shown literally by one of them."""
    bodies = _bodies(at)
    linked = [(kind, body) for kind, body in bodies if links_in(body)]
    assert not linked, f"run data drawn as a link: {linked}"
    shown = [shown_text(body) for _, body in bodies]
    for text in wanted:
        assert any(text in s for s in shown), (text, bodies)
    return bodies


@pytest.mark.parametrize("page", ["views/live.py", "views/detail.py"])
def test_a_damaged_runs_message_is_text(hostile_runs: dict[str, str], page: str) -> None:
    at = app(page, run=hostile_runs["damaged"])
    _assert_text(at, f"'final.{HOSTILE}' must be a number")


@pytest.mark.parametrize("page", ["views/live.py", "views/detail.py"])
def test_a_failed_runs_message_hosts_and_wandb_lines_are_text(hostile_runs: dict[str, str], page: str) -> None:
    at = app(page, run=hostile_runs["sync"])
    bodies = _assert_text(at, HOSTILE)
    if page == "views/detail.py":
        _assert_text(at, f"W&B: {HOSTILE}", "www.evil.example", LINK)  # the error line, the hosts table's cells
        command = [span for _, body in bodies for span in code_spans(body) if span.startswith("wandb sync")]
        assert command == [f"wandb sync {CODE_BREAK}"], bodies  # one code span holding the whole command
        at = app(page, run=hostile_runs["mode"])
        _assert_text(at, f"(mode: {HOSTILE})", f"W&B: {HOSTILE}")


def test_the_escaping_helper_shows_every_character_and_draws_no_link() -> None:
    texts = [HOSTILE, CODE_BREAK, "<http://evil.example>", "![x](http://evil.example/x.png)", "HTTPS://EVIL.EXAMPLE",
             "- item\n# heading\n1. x", "a -> b", "$x$ *y* _z_ ~~w~~ | t |", ":material/home: :blue[x]"]  # fmt: skip
    for text in texts:
        shown = safe_text.md(text)
        assert shown_text(shown) == safe_text.plain(shown) == text
        assert not links_in(shown), (text, shown)
        assert code_spans(safe_text.code(text)) == [text.replace("\n", " ")]


SHOWN_JS = "() => document.body.innerText.replaceAll('\\u2060', '')"


@pytest.mark.browser
def test_chromium_draws_no_link_to_the_host_run_data_names(server: tuple, tab: Any) -> None:  # noqa: ANN401
    srv, runs = server
    run = _failed_run(runs, "browser-run", {"mode": "offline", "sync_command": f"wandb sync {CODE_BREAK}",
                                            "error": HOSTILE}).name  # fmt: skip
    on_detail = [HOSTILE, f"W&B: {HOSTILE}", f"wandb sync {CODE_BREAK}", f"crashed: {LINK}"]  # the last: hosts
    for path, wanted in (("live", [HOSTILE]), ("detail", on_detail)):
        tab.goto(f"{srv.url}/{path}?run={run}", timeout=60_000)
        check = " && ".join(f"t.includes({json.dumps(w)})" for w in wanted)
        tab.wait_for_function(f"() => {{ const t = ({SHOWN_JS})(); return {check}; }}", timeout=60_000, polling=200)
        links = tab.eval_on_selector_all("a[href]", "as => as.map(a => a.href)")
        assert not [h for h in links if "evil.example" in h], (path, links)
