"""A query over runs in one line, in the spirit of MLflow's filter string and Aim's query:

    config.lr < 0.01 and summary.test/acc.max > 0.9 and tags contains "baseline"
    state in ("finished", "stopped") or not (name contains "debug")

A tokenizer and a recursive-descent parser turn the text into a tree (`Compare`, `All`, `Any`, `Not`);
`runstore.query_sql` turns the tree into parameterized SQL over the run index. Nothing is evaluated and
no value is ever pasted into SQL. Every error is one `QueryError`, whose message is one line naming the
position (1-based) and what was expected there. No JAX and no Streamlit here.

Fields: `config.<key>` (nested keys dotted: `config.model.hidden`), `summary.<key>` with `.last` (the
default), `.min` or `.max`, `tags`, `state`, `name`, `id`, `kind`, `task`, `group`, `notes`, `created`;
a key with other characters in backticks: config.`warm up`. `params.`/`hparams.` mean config,
`metrics.` means summary (MLflow's and Aim's words).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

MAX_LENGTH, MAX_DEPTH, MAX_TERMS = 4000, 32, 200
TEXT_FIELDS = {"id": "run_id", "name": "name", "state": "state", "kind": "kind", "task": "task", "group": "grp",
               "notes": "notes"}  # fmt: skip
NUMBER_FIELDS = {"created": "created"}
SCOPES = {"config": "config", "params": "config", "hparams": "config", "summary": "summary", "metrics": "summary"}
AGGREGATES = ("last", "min", "max")
KEYWORDS = ("and", "or", "not", "contains", "in", "true", "false")
ORDER_OPS = ("<", "<=", ">", ">=")
FIELDS_HINT = "config.<key>, summary.<key>[.min|.max], tags, state, name, id, kind, task, group, notes or created"
VALUE_HINT = 'a value (a number, a "string", true or false)'
_TOKEN = re.compile(
    r"""(?P<space>\s+)|(?P<number>-?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?(?![\w.]))|(?P<op>==|!=|<=|>=|=|<|>)"""
    r"""|(?P<punct>[(),])|(?P<word>(?:[A-Za-z_][\w\-/:@]*|`[^`]*`)(?:\.(?:[\w\-/:@]+|`[^`]*`))*)"""
)


class QueryError(ValueError):
    """A query that cannot be read; the message is one line: where, and what was expected there."""

    def __init__(self, position: int, message: str) -> None:
        self.position = position
        super().__init__(f"query, position {position}: {message}")


@dataclass(frozen=True)
class Token:
    kind: str  # number, string, op, punct, word, keyword, end
    text: str
    pos: int  # 1-based


@dataclass(frozen=True)
class Field:
    """What a comparison looks at: scope "config" | "summary" (with key and aggregate), "tags", "text" or
    "number" (key: the runs table's column)."""

    scope: str
    key: str
    aggregate: str = "last"
    text: str = ""


@dataclass(frozen=True)
class Compare:
    field: Field
    op: str  # = != < <= > >= contains in
    values: tuple[str | float | int | bool, ...]


@dataclass(frozen=True)
class All:
    parts: tuple


@dataclass(frozen=True)
class Any_:
    parts: tuple


@dataclass(frozen=True)
class Not:
    part: object


def _shown(text: str) -> str:
    return repr(text if len(text) <= 24 else text[:21] + "...")


def tokens(text: str) -> list[Token]:
    """The query's tokens, ending with an "end" token; raises QueryError at an unclosed string or a stray character."""
    if len(text) > MAX_LENGTH:
        raise QueryError(MAX_LENGTH + 1, f"the query is longer than {MAX_LENGTH} characters")
    out, i = [], 0
    while i < len(text):
        if text[i] in "\"'":
            end, chars = i + 1, []
            while end < len(text) and text[end] != text[i]:
                if text[end] == "\\" and end + 1 < len(text):
                    end += 1
                chars.append(text[end])
                end += 1
            if end >= len(text):
                raise QueryError(i + 1, f"the string opened here is not closed (expected a closing {text[i]})")
            out.append(Token("string", "".join(chars), i + 1))
            i = end + 1
            continue
        m = _TOKEN.match(text, i)
        if m is None or (m.lastgroup == "word" and "`" in m.group() and m.group().count("`") % 2):
            if text[i] in ".`" and "`" in text[i:]:
                raise QueryError(text.index("`", i) + 1, "a field's ` is not closed (expected a closing `)")
            raise QueryError(i + 1, f"unexpected character {text[i]!r}")
        kind = m.lastgroup or "space"
        if kind != "space":
            word = m.group()
            kind = "keyword" if kind == "word" and word.lower() in KEYWORDS else kind
            out.append(Token(kind, word.lower() if kind == "keyword" else word, i + 1))
        i = m.end()
    out.append(Token("end", "", len(text) + 1))
    return out


def _segments(text: str) -> list[tuple[str, bool]]:
    """A word's dotted parts, each with whether it was in backticks."""
    parts = re.findall(r"`([^`]*)`|([^.`]+)", text)
    return [(quoted, True) if quoted or not bare else (bare, False) for quoted, bare in parts]


def field_of(token: Token) -> Field:
    """The field a word names; QueryError naming the fields there are when it names none."""
    if token.kind != "word":
        found = "the end of the query" if token.kind == "end" else _shown(token.text)
        raise QueryError(token.pos, f"expected {FIELDS_HINT} or '(', found {found}")
    segs = _segments(token.text)
    head = segs[0][0].lower()
    if len(segs) == 1 and head == "tags":
        return Field("tags", "", text=token.text)
    if len(segs) == 1 and head in TEXT_FIELDS:
        return Field("text", TEXT_FIELDS[head], text=token.text)
    if len(segs) == 1 and head in NUMBER_FIELDS:
        return Field("number", NUMBER_FIELDS[head], text=token.text)
    scope = SCOPES.get(head) if not segs[0][1] else None
    if scope is None or len(segs) < 2:
        raise QueryError(token.pos, f"unknown field {_shown(token.text)}; expected {FIELDS_HINT}")
    rest, aggregate = segs[1:], "last"
    if scope == "summary" and len(rest) > 1 and not rest[-1][1] and rest[-1][0] in AGGREGATES:
        rest, aggregate = rest[:-1], rest[-1][0]
    return Field(scope, ".".join(s for s, _ in rest), aggregate, token.text)


def _kind(v: object) -> str:
    return "true/false" if isinstance(v, bool) else "a string" if isinstance(v, str) else "a number"


def check(field: Field, op: str, values: list[tuple[str | float | int | bool, int]], op_pos: int) -> None:
    """Raise QueryError where an operator or a value does not suit the field (e.g. `tags < 3`, `state > 1`)."""
    if field.scope in ("tags", "text"):
        ops, kinds = ("=", "!=", "contains", "in"), ("a string",)
    elif field.scope == "number" or (field.scope == "summary" and field.aggregate != "last"):
        ops, kinds = ("=", "!=", *ORDER_OPS, "in"), ("a number",)
    elif field.scope == "summary":
        ops, kinds = ("=", "!=", *ORDER_OPS, "contains", "in"), ("a number", "a string")
    else:
        ops, kinds = ("=", "!=", *ORDER_OPS, "contains", "in"), ("a number", "a string", "true/false")
    if op not in ops:
        raise QueryError(op_pos, f"operator {op!r} does not apply to {field.text}; expected {', '.join(ops)}")
    if op in ORDER_OPS:
        kinds = ("a number",)
    elif op == "contains":
        kinds = ("a string",)
    for value, pos in values:
        if _kind(value) not in kinds:
            raise QueryError(pos, f"expected {' or '.join(kinds)} for {field.text} {op}, found {_kind(value)}")


class _Parser:
    def __init__(self, text: str) -> None:
        self.toks, self.i, self.depth, self.terms = tokens(text), 0, 0, 0

    def peek(self) -> Token:
        return self.toks[self.i]

    def take(self) -> Token:
        self.i += 1
        return self.toks[self.i - 1]

    def is_kw(self, word: str) -> bool:
        return self.peek().kind == "keyword" and self.peek().text == word

    def disjunction(self) -> object:
        parts = [self.conjunction()]
        while self.is_kw("or"):
            self.take()
            parts.append(self.conjunction())
        return parts[0] if len(parts) == 1 else Any_(tuple(parts))

    def conjunction(self) -> object:
        parts = [self.unary()]
        while self.is_kw("and"):
            self.take()
            parts.append(self.unary())
        return parts[0] if len(parts) == 1 else All(tuple(parts))

    def unary(self) -> object:
        if self.is_kw("not"):
            self.take()
            return Not(self.unary())
        tok = self.peek()
        if tok.kind == "punct" and tok.text == "(":
            self.depth += 1
            if self.depth > MAX_DEPTH:
                raise QueryError(tok.pos, f"parentheses nested deeper than {MAX_DEPTH}")
            self.take()
            inner = self.disjunction()
            close = self.take()
            if close.text != ")" or close.kind != "punct":
                found = "the end of the query" if close.kind == "end" else _shown(close.text)
                raise QueryError(close.pos, f"expected ')' to close the '(' at position {tok.pos}, found {found}")
            self.depth -= 1
            return inner
        return self.comparison()

    def comparison(self) -> object:
        tok = self.take()
        field = field_of(tok)
        self.terms += 1
        if self.terms > MAX_TERMS:
            raise QueryError(tok.pos, f"more than {MAX_TERMS} comparisons in one query")
        negate = self.is_kw("not")
        if negate:
            self.take()
        op_tok = self.take()
        op = "=" if op_tok.text == "==" else op_tok.text
        if not (op_tok.kind == "op" or (op_tok.kind == "keyword" and op in ("contains", "in"))) or (
            negate and op not in ("contains", "in")
        ):
            found = "the end of the query" if op_tok.kind == "end" else _shown(op_tok.text)
            want = "'in' or 'contains' after 'not'" if negate else "an operator (=, !=, <, <=, >, >=, contains, in)"
            raise QueryError(op_tok.pos, f"expected {want} after {field.text}, found {found}")
        values = self.value_list(op_tok) if op == "in" else (self.value(op_tok),)
        check(field, op, values, op_tok.pos)
        node = Compare(field, op, tuple(v for v, _ in values))
        return Not(node) if negate else node

    def value(self, after: Token) -> tuple[str | float | int | bool, int]:
        tok = self.take()
        if tok.kind == "string":
            return tok.text, tok.pos
        if tok.kind == "number":
            return (float(tok.text) if any(c in tok.text for c in ".eE") else int(tok.text)), tok.pos
        if tok.kind == "keyword" and tok.text in ("true", "false"):
            return tok.text == "true", tok.pos
        found = "the end of the query" if tok.kind == "end" else _shown(tok.text)
        raise QueryError(tok.pos, f"expected {VALUE_HINT} after {_shown(after.text)}, found {found}")

    def value_list(self, after: Token) -> list[tuple[str | float | int | bool, int]]:
        open_ = self.take()
        if open_.text != "(" or open_.kind != "punct":
            raise QueryError(open_.pos, f"expected '(' and a list of values after 'in', found {_shown(open_.text)}")
        out = [self.value(open_)]
        while self.peek().kind == "punct" and self.peek().text == ",":
            out.append(self.value(self.take()))
        close = self.take()
        if close.text != ")" or close.kind != "punct":
            found = "the end of the query" if close.kind == "end" else _shown(close.text)
            raise QueryError(close.pos, f"expected ',' or ')' in the list after 'in' at {open_.pos}, found {found}")
        return out


def parse(text: str) -> object | None:
    """The query's tree; None for an empty query (every run). Raises QueryError (one line) when it cannot be read."""
    if not text or not text.strip():
        return None
    p = _Parser(text)
    tree = p.disjunction()
    end = p.peek()
    if end.kind != "end":
        what = "unexpected ')' (no '(' to close)" if end.text == ")" else f"unexpected {_shown(end.text)}"
        raise QueryError(end.pos, f"{what}; expected 'and', 'or' or the end of the query")
    return tree


def parse_field(text: str) -> Field:
    """One field ("summary.test/acc.max"), as a sort key names it; QueryError when it is not one."""
    toks = tokens(text.strip())
    if len(toks) != 2:
        raise QueryError(toks[min(1, len(toks) - 1)].pos, f"expected one field ({FIELDS_HINT})")
    return field_of(toks[0])
