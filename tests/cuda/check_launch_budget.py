#!/usr/bin/env python3
"""The launch budget of a GPU variant, read from its lowered statement (.stmt).

    check_launch_budget.py --stmt <variant>.stmt --budget 3 [--name <variant>]
    check_launch_budget.py --self-test

Counts the kernel launches (halide_cuda_run / halide_opencl_run calls) that one
call of the pipeline can make: launches in sequence add up, the branches of an
`if` (a specialize(), a bounds query) are alternatives, so a call makes the
largest count of any path through the host code. A launch inside a host `for`
loop makes the count depend on the shape: reported as unbounded, which fails.
Fails (exit 1) when that count exceeds the budget; prints the worst path's
kernels either way, so that the log shows what a call launches.

Only the pipeline's own function is read (the `func <name> (...)` block), not
the embedded device code, whose braces and names are not host statements.
"""
import argparse
import re
import sys

LAUNCH = re.compile(r"\bhalide_(cuda|opencl)_run\(\s*[^,]*,\s*\"([^\"]+)\"")
FUNC = re.compile(r"^\S*\s*func\s+(\S+)\s*\(")
UNBOUNDED = float("inf")


class Block:
    """A `{ ... }` of the host code: its items in order, each a launch name or a
    nested Block; `kind` is 'if', 'else', 'for' or 'seq' (produce, allocate, ...)."""

    def __init__(self, kind, head):
        self.kind, self.head, self.items = kind, head, []


def parse(lines):
    """The pipeline function's body as a tree of Blocks."""
    root = Block("seq", "func")
    stack = [root]
    for line in lines:
        s = line.strip()
        closes = s.startswith("}")
        if closes:
            stack.pop()
            if not stack:
                break  # the end of the function
            s = s[1:].strip()
        for m in LAUNCH.finditer(s):
            stack[-1].items.append(m.group(2))
        if s.endswith("{"):
            if s.startswith("else"):
                kind = "else"
            elif s.startswith("if ") or s.startswith("if("):
                kind = "if"
            elif s.startswith("for ") or s.startswith("for("):
                kind = "for"
            else:
                kind = "seq"
            b = Block(kind, s)
            stack[-1].items.append(b)
            stack.append(b)
    return root


def worst(block):
    """(launches, kernel names) of the path through `block` that launches most."""
    total, names = 0, []
    items = block.items
    i = 0
    while i < len(items):
        it = items[i]
        if isinstance(it, str):
            total, names = total + 1, names + [it]
            i += 1
            continue
        if it.kind == "if":
            # An if and the else (or else-if) blocks right after it: alternatives.
            branches = [it]
            while i + 1 < len(items) and isinstance(items[i + 1], Block) and items[i + 1].kind == "else":
                i += 1
                branches.append(items[i])
            best = max((worst(b) for b in branches), key=lambda r: r[0])
            total, names = total + best[0], names + best[1]
        else:
            n, ks = worst(it)
            if it.kind == "for" and n > 0:
                return UNBOUNDED, names + ["(a host loop over: %s)" % ", ".join(ks)]
            total, names = total + n, names + ks
        i += 1
    return total, names


def count(text, name=""):
    """(pipeline name, launches on the worst path, its kernels) of a .stmt's text; None if no function."""
    lines = text.splitlines()
    for i, line in enumerate(lines):
        m = FUNC.match(line)
        if m and (not name or m.group(1) == name):
            n, kernels = worst(parse(lines[i + 1:]))
            return m.group(1), n, kernels
    return None


def self_test():
    """The counting rule on small hand-written statements in Halide's printed form."""
    run = lambda k: 'let r = halide_cuda_run(cuda[0], "%s", 1, 1, 1, 32, 1, 1, 0, a, b, c)' % k
    stmt = "\n".join([
        "buffer cuda_gpu_source_kernels = {", ".entry _kernel_x() {", "}", "}",  # device code: not counted
        "external_plus_metadata func p (a, b) {",
        "if ((uint1)_halide_buffer_is_bounds_query(a)) {", " x = 1", "}",
        "produce f {", " " + run("k1"), " assert(r == 0, r)", "}",
        "if (c1) {", " " + run("k2"), " " + run("k3"), "} else if (c2) {", " " + run("k4"),
        "} else {", " if (c3) {", "  " + run("k5"), "  " + run("k6"), "  " + run("k7"), " }", "}",
        run("k8"),
        "}",
    ])
    problems = []
    got = count(stmt)
    if got != ("p", 5, ["k1", "k5", "k6", "k7", "k8"]):
        problems.append("branches: %r" % (got,))
    loop = stmt.replace("produce f {", "for (g, 0, n) {")
    if count(loop)[1] != UNBOUNDED:
        problems.append("a launch in a host loop should be unbounded: %r" % (count(loop),))
    if count("func q (a) {\n}\n")[1] != 0:
        problems.append("an empty pipeline launches nothing")
    for p in problems:
        print("self-test: " + p)
    print("self-test: %s" % ("FAILED" if problems else "passed"))
    return 1 if problems else 0


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--stmt")
    ap.add_argument("--budget", type=int)
    ap.add_argument("--name", default="")
    ap.add_argument("--self-test", action="store_true")
    a = ap.parse_args()
    if a.self_test:
        return self_test()
    if not a.stmt or a.budget is None:
        ap.error("--stmt and --budget are required (or --self-test)")
    with open(a.stmt, "rb") as f:
        got = count(f.read().decode("utf-8", errors="replace"), a.name)
    if got is None:
        print("%s: no pipeline function in %s" % (a.name or "?", a.stmt))
        return 1
    name, n, kernels = got
    shown = "unbounded" if n == UNBOUNDED else str(n)
    print("%s: at most %s kernel launches a call (budget %d): %s" % (name, shown, a.budget, ", ".join(kernels)))
    if n > a.budget:
        print("%s: over the launch budget of %d" % (name, a.budget))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
