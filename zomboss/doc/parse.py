"""Reading a literate ISA doc: Markdown fences -> lark parse -> typed records (`docmodel`).

Only ```isa fences are parsed; ```example RULE ok|bad fences are kept as programs. Every
error names `file:line:col` of the Markdown file and what was expected there.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable
from typing import Any

from lark import Lark, Token, Tree
from lark.exceptions import UnexpectedCharacters, UnexpectedEOF, UnexpectedInput, UnexpectedToken

from zomboss import expr as ex
from zomboss.doc import model as dm
from zomboss.doc.grammar import DocError, grammar_text


@functools.cache
def _parser() -> Lark:
    """The LALR parser, analysed once per process (~0.3 s). Lark's own file cache is not
    used: it is a pickle, and anything in the cache folder may have been planted; the
    analysis is only needed when a KB is (re)built, never on a cached load."""
    return Lark(grammar_text(), parser="lalr", propagate_positions=True, maybe_placeholders=False)


_FENCE = re.compile(r"^ {0,3}(```+|~~~+)\s*(.*?)\s*$")


def split_fences(text: str, path: str) -> tuple[list[tuple[int, str]], list[dm.Example]]:
    """The ```isa blocks (first content line number, text) and the example programs."""
    blocks: list[tuple[int, str]] = []
    examples: list[dm.Example] = []
    lines = text.split("\n")
    i = 0
    while i < len(lines):
        m = _FENCE.match(lines[i])
        if not m:
            i += 1
            continue
        fence, info = m.group(1), m.group(2)
        start = i
        j = i + 1
        while j < len(lines):
            m2 = _FENCE.match(lines[j])
            if m2 and m2.group(1).startswith(fence[0] * len(fence)) and not m2.group(2):
                break
            j += 1
        else:
            if info.split()[:1] in (["isa"], ["example"]):
                raise DocError(
                    f"{path}:{start + 1}:1: expected a closing {fence} for the {info.split()[0]} block opened here"
                )
        body = "\n".join(lines[start + 1 : j])
        words = info.split()
        if words[:1] == ["isa"]:
            blocks.append((start + 2, body))
        elif words[:1] == ["example"]:
            if len(words) != 3 or words[2] not in ("ok", "bad"):
                raise DocError(
                    f"{path}:{start + 1}:4: expected 'example RULE_ID ok' or 'example RULE_ID bad', got {info!r}"
                )
            examples.append(dm.Example(words[1], words[2] == "ok", body, dm.Loc(path, start + 1)))
        i = j + 1
    return blocks, examples


def _describe_expected(expected: set[str]) -> str:
    parser = _parser()
    names = []
    for name in sorted(expected):
        try:
            term = parser.get_terminal(name)
        except KeyError:
            names.append(name.lower())
            continue
        pat = term.pattern
        if pat.type == "str":
            names.append(repr(pat.value))
        else:
            names.append(
                {"NAME": "a name", "INT": "an integer", "STRING": 'a "string"', "GLOB": "a pattern"}.get(
                    name, name.lower()
                )
            )
    return ", ".join(names) if names else "end of block"


def _syntax_error(e: UnexpectedInput, path: str, first_line: int) -> DocError:
    line = first_line + (e.line or 1) - 1
    col = e.column or 1
    if isinstance(e, UnexpectedToken):
        got = "end of block" if e.token.type == "$END" else repr(str(e.token))
        return DocError(f"{path}:{line}:{col}: expected {_describe_expected(set(e.expected))}; got {got}")
    if isinstance(e, UnexpectedCharacters):
        return DocError(f"{path}:{line}:{col}: expected {_describe_expected(set(e.allowed or ()))}; got {e.char!r}")
    if isinstance(e, UnexpectedEOF):
        return DocError(f"{path}:{line}:{col}: expected {_describe_expected(set(e.expected))}; got end of block")
    return DocError(f"{path}:{line}:{col}: syntax error")


def parse_doc(text: str, path: str) -> dm.Doc:
    """Parse a whole Markdown ISA doc; raises DocError with a location on any problem."""
    if len(text) > dm.MAX_DOC_BYTES:
        raise DocError(f"{path}:1: the doc is larger than the {dm.MAX_DOC_BYTES >> 20} MB a doc may have")
    blocks, examples = split_fences(text, path)
    doc = dm.Doc(path=path, examples=examples, blocks=len(blocks))
    for first_line, body in blocks:
        try:
            tree = _parser().parse(body + "\n")
        except UnexpectedInput as e:
            raise _syntax_error(e, path, first_line) from None
        _Builder(doc, path, first_line).add(tree)
    return doc


def _int(tok: str) -> int | None:
    """The value of an INT token, or None beyond the integer limit (MAX_BITS)."""
    digits = len(tok) - 2 if tok[:2] in ("0x", "0X") else len(tok)
    if digits > ex.MAX_BITS:  # far beyond the limit in any base; never parse a huge literal
        return None
    v = int(tok, 16) if tok[:2] in ("0x", "0X") else int(tok, 10)
    return v if v.bit_length() <= ex.MAX_BITS else None


class _Builder:
    """Turns lark trees into docmodel records, keeping Markdown line numbers."""

    def __init__(self, doc: dm.Doc, path: str, first_line: int) -> None:
        self.doc, self.path, self.first = doc, path, first_line
        self._depth = 0

    def loc(self, t: Tree | Token) -> dm.Loc:
        if isinstance(t, Token):
            return dm.Loc(self.path, self.first + (t.line or 1) - 1, t.column or 1)
        return dm.Loc(self.path, self.first + t.meta.line - 1, t.meta.column)

    # -- expressions --------------------------------------------------------------------
    def expr(self, t: Tree | Token) -> ex.Expr:
        self._depth += 1
        try:
            if self._depth > ex.MAX_DEPTH:
                raise DocError(f"{self.loc(t).pos}: expression nested more than {ex.MAX_DEPTH} deep (the limit)")
            return self._expr(t)
        finally:
            self._depth -= 1

    def _expr(self, t: Tree | Token) -> ex.Expr:
        if isinstance(t, Token):
            raise DocError(f"{self.loc(t).pos}: unexpected {t!s}")
        k = t.data
        c = t.children
        if k == "int":
            v = _int(str(c[0]))
            if v is None:
                raise DocError(f"{self.loc(c[0]).pos}: integer literal beyond the {ex.MAX_BITS}-bit limit")
            return ex.Int(v)
        if k == "ref":
            return ex.Ref(tuple(str(x) for x in c))
        if k == "sym":
            name = str(c[0])[1:-1]
            if not re.match(r"^[A-Za-z_][A-Za-z0-9_]*$", name):
                raise DocError(f"{self.loc(c[0]).pos}: a quoted symbol must be a name, got {name!r}")
            return ex.Sym(name)
        if k in ("or_expr", "and_expr", "bor", "band"):
            op = {"or_expr": "or", "and_expr": "and", "bor": "|", "band": "&"}[k]
            self._chain(t, len(c))
            out = self.expr(c[0])
            for x in c[1:]:
                out = ex.Bin(op, out, self.expr(x))
            return out
        if k in ("shift", "sum", "product"):
            self._chain(t, (len(c) + 1) // 2)
            out = self.expr(c[0])
            for op_tok, x in zip(c[1::2], c[2::2], strict=True):
                out = ex.Bin(str(op_tok), out, self.expr(x))
            return out
        if k == "implies":
            return ex.Bin("->", self.expr(c[0]), self.expr(c[2]))
        if k == "compare":
            return ex.Bin(str(c[1]), self.expr(c[0]), self.expr(c[2]))
        if k == "inset":
            return ex.InSet(self.expr(c[0]), tuple(self.expr(x) for x in c[1:]))
        if k == "not_":
            return ex.Un("not", self.expr(c[0]))
        if k == "neg":
            inner = self.expr(c[0])
            return ex.Int(-inner.value) if isinstance(inner, ex.Int) else ex.Un("neg", inner)
        if k == "cond":
            return ex.Cond(self.expr(c[0]), self.expr(c[1]), self.expr(c[2]))
        if k in ("forall", "exists"):
            var, lo, hi = str(c[0]), _int(str(c[1])), _int(str(c[2]))
            if lo is None or hi is None or hi < lo or hi - lo >= 64:
                raise DocError(
                    f"{self.loc(t).pos}: {'all' if k == 'forall' else 'any'}(...) ranges over lo..hi with at most 64 values"
                )
            body = self.expr(c[3])
            terms = [ex.substitute(body, {var: ex.Int(v)}) for v in range(lo, hi + 1)]
            return _balanced("and" if k == "forall" else "or", terms)
        if k == "call":
            fn = str(c[0])
            args = tuple(self.expr(x) for x in c[1:])
            if fn not in ex.FUNCS:
                raise DocError(f"{self.loc(c[0]).pos}: unknown function {fn!r} (known: {', '.join(ex.FUNCS)})")
            if len(args) != ex.FUNCS[fn]:
                raise DocError(f"{self.loc(c[0]).pos}: {fn} takes {ex.FUNCS[fn]} argument(s), got {len(args)}")
            return ex.Call(fn, args)
        raise DocError(f"{self.loc(t).pos}: unexpected {k}")

    def _chain(self, t: Tree, n: int) -> None:
        """`a + b + c ...` becomes a left-nested chain n - 1 deep."""
        if self._depth + n - 1 > ex.MAX_DEPTH:
            raise DocError(f"{self.loc(t).pos}: expression nested more than {ex.MAX_DEPTH} deep (the limit)")

    @staticmethod
    def _doc(children: list) -> str:
        for x in children:
            if isinstance(x, Tree) and x.data == "doc":
                return str(x.children[0])[1:-1]
        return ""

    # -- statements -----------------------------------------------------------------------
    def add(self, tree: Tree) -> None:
        for st in tree.children:
            getattr(self, "s_" + st.data)(st)

    def s_param(self, t: Tree) -> None:
        c = t.children
        dom = next((x for x in c if isinstance(x, Tree) and x.data == "param_domain"), None)
        value = next(x for x in c[1:] if not (isinstance(x, Tree) and x.data in ("param_domain", "doc")))
        lo, hi = (self.expr(dom.children[0]), self.expr(dom.children[1])) if dom is not None else (None, None)
        self.doc.params.append(dm.Param(str(c[0]).lower(), self.expr(value), self._doc(c), self.loc(t), lo, hi))

    def _kvs(self, items: list) -> dict[str, ex.Expr]:
        out: dict[str, ex.Expr] = {}
        for kv in items:
            if isinstance(kv, Tree) and kv.data in ("kv", "mem_field"):
                key = str(kv.children[0])
                if key in out:
                    raise DocError(f"{self.loc(kv).pos}: field {key!r} given twice")
                out[key] = self.expr(kv.children[1])
        return out

    def s_memory(self, t: Tree) -> None:
        c = t.children
        external = any(isinstance(x, Tree) and x.data == "mem_external" for x in c[1:])
        self.doc.memories.append(dm.Memory(str(c[0]), self._kvs(c[1:]), external, self.loc(t)))

    def s_regfile(self, t: Tree) -> None:
        c = t.children
        self.doc.regfiles.append(dm.RegFile(str(c[0]), self._kvs(c[1:]), self.loc(t)))

    def s_layout(self, t: Tree) -> None:
        c = t.children
        head = self._kvs([c[1]])
        if "width" not in head:
            raise DocError(f"{self.loc(c[1]).pos}: a layout starts with 'width: N'")
        bits: dict[str, tuple[ex.Expr, ex.Expr]] = {}
        for bf in c[2:]:
            name = str(bf.children[0])
            hi = self.expr(bf.children[1])
            lo = self.expr(bf.children[2]) if len(bf.children) > 2 else hi
            bits[name] = (hi, lo)
        self.doc.layouts.append(dm.Layout(str(c[0]), head["width"], bits, self.loc(t)))

    def s_state(self, t: Tree) -> None:
        c = t.children
        size = None
        rest = c[1:]
        if rest and isinstance(rest[0], Tree) and rest[0].data == "index":
            size = self.expr(rest[0].children[0])
            rest = rest[1:]
        self.doc.states.append(dm.State(str(c[0]), size, self._kvs(rest), self.loc(t)))

    def s_instr(self, t: Tree) -> None:
        c = t.children
        fam = next((x for x in c if isinstance(x, Tree) and x.data in ("fam_set", "fam_range")), None)
        if fam is None:
            self._instr(t, {})
            return
        for env in self._family(fam):
            self._instr(t, env)

    def _family(self, fam: Tree) -> list[dict[str, str | int]]:
        """Each member's values of the family variables (`for k in 0..2`, `for m, u in {(a, b), ...}`)."""
        names = [str(x) for x in fam.children if isinstance(x, Token) and x.type == "NAME"]
        if fam.data == "fam_range":
            ints = [x for x in fam.children if isinstance(x, Token) and x.type == "INT"]
            lo, hi = (_int(str(x)) for x in ints)
            if lo is None or hi is None or hi < lo or hi - lo >= 1024:
                raise DocError(f"{self.loc(fam).pos}: a family range is lo..hi with at most 1024 members")
            return [{names[0]: v} for v in range(lo, hi + 1)]
        out = []
        for val in (x for x in fam.children if isinstance(x, Tree) and x.data == "fam_val"):
            atoms: list[Any] = [a.children[0] for a in val.children]
            vals: list[str | int] = [(_int(str(a)) or 0) if a.type == "INT" else str(a) for a in atoms]
            if len(vals) != len(names):
                raise DocError(
                    f"{self.loc(val).pos}: a family member gives {len(vals)} value(s) for {len(names)} name(s)"
                )
            out.append(dict(zip(names, vals, strict=True)))
        return out

    REPEATABLE = ("c_uses", "c_reads", "c_writes", "c_sets", "c_pops", "c_pushes", "c_effect", "c_for")

    def _clauses(self, items: list[Any], env: dict[str, str | int]) -> list[tuple[Any, dict[str, str | int]]]:
        """An instruction's clauses with the values their names stand for: a `for i in lo..hi
        { ... }` clause gives its clauses once per value of i (at most 1024), in order."""
        out: list[tuple[Any, dict[str, str | int]]] = []
        for x in items:
            if not (isinstance(x, Tree) and x.data == "c_for"):
                out.append((x, env))
                continue
            var, lo_t, hi_t, *body = x.children
            lo, hi = _int(str(lo_t)), _int(str(hi_t))
            if lo is None or hi is None or hi < lo or hi - lo >= 1024:
                raise DocError(f"{self.loc(x).pos}: a `for` clause ranges over lo..hi with at most 1024 values")
            if str(var) in env:
                raise DocError(f"{self.loc(x).pos}: `for {var}` hides the family variable {var}")
            for y in body:
                if isinstance(y, Tree) and y.data not in self.REPEATABLE:
                    what = str(y.data).removeprefix("c_")
                    raise DocError(
                        f"{self.loc(y).pos}: a `for` clause repeats uses, reads, writes, sets, pops, pushes "
                        f"and effects, not {what}"
                    )
            for v in range(lo, hi + 1):
                out += self._clauses(body, {**env, str(var): v})
        return out

    def _instr(self, t: Tree, fenv: dict[str, str | int]) -> None:
        c = t.children
        iname = c[0]
        parts = [str(x) for x in iname.children]
        name = parts[0]
        family = ""
        if len(parts) > 1:
            if parts[1] not in fenv:
                raise DocError(f"{self.loc(iname).pos}: {{{parts[1]}}} names no variable of the instruction's family")
            name = parts[0] + str(fenv[parts[1]]) + (parts[2] if len(parts) > 2 else "")
            family = parts[0] + "{" + parts[1] + "}" + (parts[2] if len(parts) > 2 else "")
        scope: dict[str, str | int] = {}  # the family's values, and a `for` clause's index
        subst: dict[str, ex.Expr] = {}  # the same, as the expressions that replace those names

        def E(x: Any) -> ex.Expr:
            e = self.expr(x)
            return ex.substitute(e, subst) if subst else e

        def N(x: Any) -> str:  # a memory, view, unit, queue or layout name; family variables stand for their value
            n = str(x)
            return str(scope[n]).lower() if n in scope else n

        operands: list[dm.Operand] = []
        unit, latency, issue, macro = "", None, None, ""
        uses: list[dm.Uses] = []
        lets: list[tuple[str, ex.Expr]] = []
        reads: list[dm.Access] = []
        writes: list[dm.Access] = []
        sets: list[dm.Setter] = []
        pops: list[dm.TokenOp] = []
        pushes: list[dm.TokenOp] = []
        effects: list[dm.Effect] = []
        for x, values in self._clauses(c[1:], fenv):
            if not isinstance(x, Tree):
                continue
            if values != scope:
                scope.clear()
                scope.update(values)
                subst.clear()
                subst.update({n: (ex.Int(v) if isinstance(v, int) else ex.Ref((v,))) for n, v in scope.items()})
            k = x.data
            xc = x.children
            if k == "op_int":
                operands.append(dm.Operand(str(xc[0]), "int", E(xc[1]), E(xc[2])))
            elif k == "op_named":
                operands.append(dm.Operand(str(xc[0]), N(xc[1])))
            elif k == "c_unit":
                unit = N(xc[0])
            elif k == "c_uses":
                idx = E(xc[1].children[0]) if len(xc) == 3 else None
                uses.append(dm.Uses(str(xc[0]), idx, str(xc[-1])))
            elif k == "c_let":
                lets.append((str(xc[0]), E(xc[1])))
            elif k in ("c_reads", "c_writes"):
                when = E(xc[3].children[0]) if len(xc) > 3 else None
                acc = dm.Access(N(xc[0]), E(xc[1]), E(xc[2]), when, self.loc(x))
                (reads if k == "c_reads" else writes).append(acc)
            elif k == "c_sets":
                for s in xc:
                    sc = s.children
                    if len(sc) == 4:
                        sets.append(dm.Setter(str(sc[0]), E(sc[1].children[0]), str(sc[2]), E(sc[3])))
                    else:
                        sets.append(dm.Setter(str(sc[0]), None, str(sc[1]), E(sc[2])))
            elif k == "c_latency":
                latency = E(xc[0])
            elif k == "c_issue":
                issue = E(xc[0])
            elif k in ("c_pops", "c_pushes"):
                tok_parts = {str(y.data): E(y.children[0]) for y in xc[1:] if isinstance(y, Tree)}
                tok = dm.TokenOp(N(xc[0]), tok_parts.get("when"), tok_parts.get("index"))
                (pops if k == "c_pops" else pushes).append(tok)
            elif k == "c_effect":
                effects.append(self._effect(x, E, N))
            elif k == "c_macro":
                macro = str(xc[0])[1:-1]
        self.doc.instrs.append(
            dm.Instr(
                name,
                tuple(operands),
                self._doc(c),
                unit,
                tuple(uses),
                tuple(lets),
                tuple(reads),
                tuple(writes),
                tuple(sets),
                latency,
                self.loc(t),
                tuple(pops),
                tuple(pushes),
                tuple(effects),
                macro,
                family,
                issue,
            )
        )

    def _effect(self, t: Tree, E: Callable[[Any], ex.Expr], N: Callable[[Any], str]) -> dm.Effect:
        loops: list[dm.EffLoop] = []
        lets: list[tuple[str, ex.Expr]] = []
        reads: list[tuple[str, str, ex.Expr]] = []
        assigns: list[dm.Assign] = []
        for x in t.children:
            if not isinstance(x, Tree):
                continue
            if x.data == "eff_loops":
                for lp in x.children:
                    lc = lp.children
                    if lp.data == "loop_count":
                        loops.append(dm.EffLoop(str(lc[0]), E(lc[1])))
                    else:
                        loops.append(dm.EffLoop(str(lc[0]), None, N(lc[1]), E(lc[2]), E(lc[3]), N(lc[4])))
            elif x.data == "eff_let":
                lets.append((str(x.children[0]), E(x.children[1])))
            elif x.data == "eff_read":
                reads.append((str(x.children[0]), N(x.children[1]), E(x.children[2])))
            elif x.data == "eff_assign":
                xc = x.children
                args: list[dm.TArg] = []
                when = None
                for a in xc[3:]:
                    if isinstance(a, Tree) and a.data == "when":
                        when = E(a.children[0])
                    elif isinstance(a, Tree) and a.data == "ta_ref":
                        args.append(dm.TArg("ref", N(a.children[0]), E(a.children[1])))
                    elif isinstance(a, Tree) and a.data == "ta_opt":
                        args.append(dm.TArg("opt", str(a.children[0]), E(a.children[1])))
                    elif isinstance(a, Tree) and a.data == "ta_val":
                        args.append(dm.TArg("val", "", E(a.children[0])))
                assigns.append(dm.Assign(N(xc[0]), E(xc[1]), str(xc[2]), tuple(args), when, self.loc(x)))
        return dm.Effect(tuple(loops), tuple(lets), tuple(assigns), self.loc(t), tuple(reads))

    def _decl(self, t: Tree, kind: str) -> None:
        c = t.children
        self.doc.decls.append(dm.Decl(kind, str(c[0]), self._kvs(c[1:]), self.loc(t)))

    def s_view(self, t: Tree) -> None:
        self._decl(t, "view")

    def s_tensor(self, t: Tree) -> None:
        self._decl(t, "tensor")

    def s_queue(self, t: Tree) -> None:
        c = t.children
        if len(c) > 1 and isinstance(c[1], Tree) and c[1].data == "index":  # an array: its size is field `count`
            fields = self._kvs(c[2:])
            if "count" in fields:
                raise DocError(f"{self.loc(t).pos}: queue {c[0]}: give the array's size once, as queue {c[0]}[N]")
            fields["count"] = self.expr(c[1].children[0])
            self.doc.decls.append(dm.Decl("queue", str(c[0]), fields, self.loc(t)))
        else:
            self._decl(t, "queue")

    def s_unitdecl(self, t: Tree) -> None:
        self._decl(t, "engine")

    def s_fetch(self, t: Tree) -> None:
        self.doc.decls.append(dm.Decl("fetch", "fetch", self._kvs(t.children), self.loc(t)))

    def s_stall(self, t: Tree) -> None:
        self._decl(t, "stall")

    def s_interlock(self, t: Tree) -> None:
        for name in t.children:
            self.doc.decls.append(dm.Decl("interlock", str(name), {}, self.loc(t)))

    @staticmethod
    def _dotted(t: Tree) -> str:
        return ".".join(str(x) for x in t.children)

    def s_rule(self, t: Tree) -> None:
        c = t.children
        patterns: tuple[str, ...] = ()
        i = 1
        if isinstance(c[1], Tree) and c[1].data == "on":
            patterns = tuple(str(p.children[0]) for p in c[1].children)
            i = 2
        self.doc.rules.append(dm.Rule(self._dotted(c[0]), patterns, str(c[i])[1:-1], self.expr(c[i + 1]), self.loc(t)))

    def s_hazard(self, t: Tree) -> None:
        c = t.children
        self.doc.hazards.append(
            dm.Hazard(
                self._dotted(c[0]), str(c[1])[1:-1], str(c[2]), str(c[3]), str(c[4]), str(c[5]), str(c[6]), self.loc(t)
            )
        )

    def s_workload(self, t: Tree) -> None:
        c = t.children
        self.doc.workloads.append(dm.WorkloadDecl(str(c[0]), tuple(str(x) for x in c[1:]), self.loc(t)))

    def s_mapping(self, t: Tree) -> None:
        c = t.children
        knobs: list[dm.Knob] = []
        cons: list[dm.Constraint] = []
        costs: list[dm.Cost] = []
        lets: dict[str, ex.Expr] = {}
        for x in c[1:]:
            xc = x.children
            if x.data == "mlet":  # inlined into the constraints that follow
                lets[str(xc[0])] = ex.substitute(self.expr(xc[1]), lets)
            elif x.data in ("knob_int", "knob_enum"):
                knobs.append(self._knob(x, lets))
            elif x.data == "cost":
                expr = ex.substitute(self.expr(xc[2]), lets)
                costs.append(dm.Cost(str(xc[0]), str(xc[1])[1:-1], expr, self.loc(x)))
            else:
                cons.append(
                    dm.Constraint(
                        self._dotted(xc[0]), str(xc[1])[1:-1], ex.substitute(self.expr(xc[2]), lets), self.loc(x)
                    )
                )
        self.doc.mappings.append(
            dm.MappingSpace(str(c[0]), tuple(knobs), tuple(cons), self.loc(t), tuple(lets.items()), tuple(costs))
        )

    def _knob(self, x: Tree, lets: dict[str, ex.Expr]) -> dm.Knob:
        xc = x.children
        default = when = None
        for y in xc:
            if isinstance(y, Tree) and y.data == "knob_default":
                default = ex.substitute(self.expr(y.children[0]), lets)
            elif isinstance(y, Tree) and y.data == "knob_when":
                when = ex.substitute(self.expr(y.children[0]), lets)
        name, doc, loc = str(xc[0]), self._doc(xc), self.loc(x)
        if x.data == "knob_int":
            return dm.Knob(name, self.expr(xc[1]), self.expr(xc[2]), (), doc, loc, default, when)
        vals = tuple(str(v) for v in xc[1:] if isinstance(v, Token))
        return dm.Knob(name, None, None, vals, doc, loc, default, when)


def _balanced(op: str, terms: list[ex.Expr]) -> ex.Expr:
    """`t0 op t1 op ...` as a balanced tree, so that 64 terms nest 6 deep, not 64."""
    if len(terms) == 1:
        return terms[0]
    mid = len(terms) // 2
    return ex.Bin(op, _balanced(op, terms[:mid]), _balanced(op, terms[mid:]))
