#!/usr/bin/env python3
"""Checks that README.md and docs/ stay true (docs/testing.md, "The documentation checks").

    check_docs.py links   --root DIR
    check_docs.py example --root DIR --name c-example --compiler cc --include DIR --lib libfbngrad.a
                          [--flag -std=c11 ...] [--expect c-example-output] [--work DIR]
    check_docs.py cli     --root DIR --cli build/cmake/bin/fbngrad [--python build/venv/bin/python] [--work DIR]
    check_docs.py self-test

The Markdown is parsed with markdown-it-py (CommonMark, plus GitHub's tables), so
that a link is what a renderer makes a link, and a code block is what it shows.
The files checked are README.md and every docs/**/*.md under --root.

links    Every relative link and image (Markdown, or <a href>/<img src> in HTML) must
         name a file or folder inside the repository; a #anchor must be a heading of
         the target Markdown file (GitHub's slugs) or an id/name it sets in HTML.
         Links with a scheme (https:, mailto:) are not followed.
example  The code block marked <!-- doc-test: NAME --> in README.md is written to a
         file, compiled with --compiler against the built library (--include,
         --lib; the link line README.md shows) with warnings as errors, and run;
         it must exit 0, and print exactly the block marked --expect, if given.
cli      Every sh/bash/console/shell block whose commands start with `fbngrad` must be
         marked <!-- doc-test: cli --> (or <!-- doc-test: skip REASON -->, said in
         the log). Each cli block runs as one bash script (set -euo pipefail) in a
         fresh folder, with the built CLI's folder and --python's folder first on
         PATH; it must exit 0. At least one block must run.
Exit status 0 when all is well, 1 with each problem printed, 77 (ctest's skip)
when markdown-it-py is missing (tools/requirements-test.txt installs it).
"""

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from urllib.parse import unquote, urlsplit

try:
    from markdown_it import MarkdownIt
except ImportError:  # tools/dev.sh test installs it (tools/requirements-test.txt)
    MarkdownIt = None

MARKER_RE = re.compile(r"^\s*<!--\s*doc-test:\s*(\S+)(.*?)-->\s*$", re.S)
HTML_LINK_RE = re.compile(r"""<(?:a|img)\b[^>]*?\b(?:href|src)\s*=\s*["']([^"']+)["']""", re.I)
HTML_ID_RE = re.compile(r"""<[a-z]+\b[^>]*?\b(?:id|name)\s*=\s*["']([^"']+)["']""", re.I)
SHELL_LANGS = {"sh", "bash", "console", "shell"}


def parser():
    return MarkdownIt("commonmark").enable("table")


def doc_files(root):
    files = [root / "README.md"] if (root / "README.md").exists() else []
    return files + sorted((root / "docs").rglob("*.md"))


def rel(path, root):
    try:
        return str(path.relative_to(root))
    except ValueError:
        return str(path)


def inline_text(token):
    """The plain text of an inline token, as GitHub reads a heading for its anchor."""
    parts = []
    for child in token.children or []:
        if child.type in ("text", "code_inline"):
            parts.append(child.content)
        elif child.type in ("softbreak", "hardbreak"):
            parts.append(" ")
        elif child.type == "image":
            parts.append(inline_text(child))
    return "".join(parts)


def github_slug(text):
    """GitHub's heading anchor: lower case, punctuation dropped, spaces to hyphens."""
    text = text.strip().lower()
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


class Doc:
    """One Markdown file: its tokens, anchors, links and marked code blocks."""

    def __init__(self, path, md):
        self.path = path
        self.tokens = md.parse(path.read_text(encoding="utf-8"))

    def line(self, token):
        return token.map[0] + 1 if token.map else 0

    def anchors(self):
        found, seen = set(), {}
        for i, tok in enumerate(self.tokens):
            if tok.type == "heading_open":
                slug = github_slug(inline_text(self.tokens[i + 1]))
                n = seen.get(slug, 0)
                seen[slug] = n + 1
                found.add(slug if n == 0 else f"{slug}-{n}")
            elif tok.type in ("html_block", "html_inline"):
                found.update(HTML_ID_RE.findall(tok.content))
            for child in tok.children or []:
                if child.type == "html_inline":
                    found.update(HTML_ID_RE.findall(child.content))
        return found

    def links(self):
        """(line, target) of every link and image, Markdown or HTML."""
        for tok in self.tokens:
            if tok.type == "html_block":
                for target in HTML_LINK_RE.findall(tok.content):
                    yield self.line(tok), target
            for child in tok.children or []:
                if child.type == "link_open":
                    yield self.line(tok), child.attrs.get("href", "")
                elif child.type == "image":
                    yield self.line(tok), child.attrs.get("src", "")
                elif child.type == "html_inline":
                    for target in HTML_LINK_RE.findall(child.content):
                        yield self.line(tok), target

    def fences(self):
        """(marker name or None, marker rest, fence token) of every fenced code block."""
        for i, tok in enumerate(self.tokens):
            if tok.type != "fence":
                continue
            name, rest = None, ""
            prev = self.tokens[i - 1] if i else None
            if prev is not None and prev.type == "html_block":
                m = MARKER_RE.match(prev.content)
                if m:
                    name, rest = m.group(1), m.group(2).strip()
            yield name, rest, tok

    def stray_markers(self):
        """Markers that no code block follows (a typo would otherwise hide a test)."""
        for i, tok in enumerate(self.tokens):
            if tok.type == "html_block" and MARKER_RE.match(tok.content):
                nxt = self.tokens[i + 1] if i + 1 < len(self.tokens) else None
                if nxt is None or nxt.type != "fence":
                    yield self.line(tok), MARKER_RE.match(tok.content).group(1)


def check_links(root):
    root = root.resolve()
    md = parser()
    docs, problems, checked = {}, [], 0

    def doc(path):
        if path not in docs:
            docs[path] = Doc(path, md)
        return docs[path]

    for path in doc_files(root):
        for line, target in doc(path).links():
            where = f"{rel(path, root)}:{line}: link {target!r}"
            if not target:
                problems.append(f"{where}: empty")
                continue
            parts = urlsplit(target)
            if parts.scheme or target.startswith("//"):
                continue  # not relative: not followed
            checked += 1
            dest = (path.parent / unquote(parts.path)).resolve() if parts.path else path
            if dest != root and root not in dest.parents:
                problems.append(f"{where}: points outside the repository ({dest})")
                continue
            if not dest.exists():
                problems.append(f"{where}: {rel(dest, root)} does not exist")
                continue
            anchor = unquote(parts.fragment)
            if anchor and dest.suffix == ".md" and anchor not in doc(dest).anchors():
                problems.append(f"{where}: no heading or id #{anchor} in {rel(dest, root)}")
    if checked == 0:
        problems.append("no relative link found: is --root the repository?")
    return problems, f"{checked} relative links in {len(doc_files(root))} files"


def marked_block(path, name):
    """The fence token of the one code block marked <!-- doc-test: NAME -->."""
    blocks = [tok for n, _, tok in Doc(path, parser()).fences() if n == name]
    if len(blocks) != 1:
        raise LookupError(f"{path}: {len(blocks)} code blocks marked <!-- doc-test: {name} -->, want 1")
    return blocks[0]


def run(cmd, **kw):
    print("+ " + " ".join(str(c) for c in cmd), flush=True)
    return subprocess.run([str(c) for c in cmd], capture_output=True, text=True, **kw)


def check_example(root, name, compiler, include, lib, flags, expect, work):
    readme = root / "README.md"
    try:
        block = marked_block(readme, name)
        expected = marked_block(readme, expect).content if expect else None
    except LookupError as e:
        return [str(e)], ""
    source = block.content
    src = work / f"{name}.{'c' if block.info.strip() == 'c' else 'cpp'}"  # the compiler driver goes by it
    exe = work / name
    src.write_text(source)
    # The link line of README.md's "Installing and linking" (the archive is C++ inside).
    built = run([compiler, *flags, "-Wall", "-Wextra", "-Werror", src, f"-I{include}", lib,
                 "-lstdc++", "-lpthread", "-ldl", "-lm", "-o", exe])
    if built.returncode != 0:
        return [f"README.md's {name} does not compile:\n{built.stdout}{built.stderr}"], ""
    ran = run([exe], timeout=120)
    print(ran.stdout, end="")
    problems = []
    if ran.returncode != 0:
        problems.append(f"README.md's {name} exited {ran.returncode}:\n{ran.stderr}")
    if expected is not None and ran.stdout != expected:
        problems.append(f"README.md's {name} printed\n{ran.stdout}but the block {expect} shows\n{expected}")
    return problems, f"{name}: {len(source.splitlines())} lines compiled and run"


def command_words(block):
    """The first word of each command of a shell block (continuations and comments skipped)."""
    words, continued = [], False
    for line in block.splitlines():
        text = line.strip()
        if text.startswith("$ "):
            text = text[2:]
        if not continued and text and not text.startswith("#"):
            words.append(text.split()[0])
        continued = line.rstrip().endswith("\\")
    return words


def check_cli(root, cli, python, work):
    md = parser()
    problems, ran, skipped = [], 0, []
    env = dict(os.environ)
    path_dirs = [str(Path(cli).resolve().parent)]
    if python:
        path_dirs.append(os.path.dirname(os.path.abspath(python)))  # not resolved: a venv's python is a link
    env["PATH"] = os.pathsep.join(path_dirs + [env.get("PATH", "")])
    for path in doc_files(root):
        d = Doc(path, md)
        for line, name in d.stray_markers():
            problems.append(f"{rel(path, root)}:{line}: <!-- doc-test: {name} --> is not followed by a code block")
        for name, rest, tok in d.fences():
            lang = tok.info.split()[0] if tok.info.strip() else ""
            where = f"{rel(path, root)}:{d.line(tok)}"
            shows_cli = any(os.path.basename(w) == "fbngrad" for w in command_words(tok.content))
            if name == "skip":
                skipped.append(f"{where} ({rest or 'no reason given'})")
                continue
            if name != "cli":
                if lang in SHELL_LANGS and shows_cli:
                    problems.append(f"{where}: a {lang} block shows fbngrad commands but is not run: mark it "
                                    "<!-- doc-test: cli --> (or <!-- doc-test: skip REASON -->)")
                continue
            folder = Path(tempfile.mkdtemp(prefix="block-", dir=work))
            script = "set -euo pipefail\nset -x\n" + tok.content
            print(f"== {where}: running in {folder}", flush=True)
            result = subprocess.run(["bash", "-c", script], cwd=folder, env=env, stdout=subprocess.PIPE,
                                    stderr=subprocess.STDOUT, text=True, timeout=300)
            print(result.stdout, end="", flush=True)
            ran += 1
            if result.returncode != 0:
                problems.append(f"{where}: the block exited {result.returncode} (its log is above; "
                                f"its files are in {folder})")
            else:
                shutil.rmtree(folder)
    for s in skipped:
        print(f"not run, as marked: {s}")
    if ran == 0:
        problems.append("no <!-- doc-test: cli --> block found: nothing ran")
    return problems, f"{ran} CLI blocks run, {len(skipped)} marked skip"


def self_test():
    """Each check on made-up documents that it must fail (and one it must pass)."""
    failures = 0

    def expect(label, problems, *needles):
        nonlocal failures
        text = "\n".join(problems)
        ok = all(n in text for n in needles) if needles else not problems
        print(f"{'ok  ' if ok else 'FAIL'} self-test {label}" + ("" if ok else f": got {problems!r}"))
        failures += not ok

    with tempfile.TemporaryDirectory() as tmp:
        repo = Path(tmp) / "repo"
        (repo / "docs").mkdir(parents=True)
        (repo / "README.md").write_text(
            "# Top\n\n## A heading, with `code`\n\n[ok](docs/a.md#the-part) [ok2](#a-heading-with-code) "
            "[dir](docs/)\n\n| t |\n|---|\n| [missing in a table](docs/none.md) |\n\n"
            "[bad anchor](docs/a.md#no-such-part) [outside](../elsewhere.md) ![img](pic.png)\n"
            "<a href=\"docs/gone.md\">html</a> [web](https://example.org/x)\n\n```sh\n[not a link](nowhere.md)\n```\n")
        (repo / "docs" / "a.md").write_text("# A\n\n## The part\n\n[back](../README.md#top)\n")
        problems, _ = check_links(repo)
        expect("links: the broken ones", problems, "docs/none.md does not exist", "#no-such-part",
               "outside the repository", "pic.png does not exist", "docs/gone.md does not exist")
        expect("links: exactly five problems", [] if len(problems) == 5 else problems)
        (repo / "README.md").write_text("# Top\n\n[ok](docs/a.md#the-part) [self](#top)\n")
        expect("links: all resolve", check_links(repo)[0])

        fake = Path(tmp) / "bin" / "fbngrad"
        fake.parent.mkdir()
        fake.write_text("#!/bin/sh\n[ \"$1\" = demo ]\n")  # only `fbngrad demo` succeeds
        fake.chmod(0o755)
        work = Path(tmp) / "work"
        work.mkdir()
        (repo / "README.md").write_text("# T\n\n<!-- doc-test: cli -->\n```sh\nfbngrad demo\n```\n")
        expect("cli: a passing block", check_cli(repo, fake, None, work)[0])
        (repo / "docs" / "a.md").write_text(
            "# A\n\n```sh\nfbngrad demo   # not marked\n```\n\n<!-- doc-test: cli -->\n```bash\n"
            "fbngrad demo\nfbngrad info\n```\n\n<!-- doc-test: cli -->\n\ntext\n\n"
            "<!-- doc-test: skip needs a GPU -->\n```sh\nfbngrad run --device cuda\n```\n")
        problems, _ = check_cli(repo, fake, None, work)
        expect("cli: unmarked, failing and stray", problems, "a.md:3: a sh block shows fbngrad commands",
               "a.md:8: the block exited 1", "is not followed by a code block")
        (repo / "README.md").write_text("# T\n")
        (repo / "docs" / "a.md").write_text("# A\n")
        expect("cli: nothing to run", check_cli(repo, fake, None, work)[0], "nothing ran")

        (repo / "README.md").write_text(
            "<!-- doc-test: c-example -->\n```c\n#include <stdio.h>\nint main(void) { int unused; puts(\"hi\"); "
            "return 0; }\n```\n\n<!-- doc-test: c-example-output -->\n```text\nhello\n```\n")
        cc = shutil.which("cc") or shutil.which("gcc")
        if cc:
            problems, _ = check_example(repo, "c-example", cc, repo, "-lm", [], "c-example-output", work)
            expect("example: warnings are errors", problems, "does not compile", "unused")
            (repo / "README.md").write_text((repo / "README.md").read_text().replace("int unused; ", ""))
            problems, _ = check_example(repo, "c-example", cc, repo, "-lm", [], "c-example-output", work)
            expect("example: wrong output", problems, "printed\nhi\nbut the block c-example-output shows\nhello")
        problems, _ = check_example(repo, "cpp-example", "c++", repo, "-lm", [], None, work)
        expect("example: no marked block", problems, "0 code blocks marked <!-- doc-test: cpp-example -->")
    print(f"self-test: {'all cases as expected' if not failures else f'{failures} failed'}")
    return 1 if failures else 0


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="check", required=True)
    for name in ("links", "example", "cli"):
        p = sub.add_parser(name)
        p.add_argument("--root", type=Path, required=True, help="the repository (README.md, docs/)")
        p.add_argument("--work", type=Path, help="a folder for files the check writes (default: a temporary one)")
    ex = sub.choices["example"]
    ex.add_argument("--name", required=True, help="the marker of the example's code block in README.md")
    ex.add_argument("--compiler", required=True)
    ex.add_argument("--include", type=Path, required=True, help="the folder holding fbngrad/fbngrad.h")
    ex.add_argument("--lib", type=Path, required=True, help="the built libfbngrad.a")
    ex.add_argument("--flag", action="append", default=[], help="a compiler flag (repeatable)")
    ex.add_argument("--expect", help="the marker of the block holding the example's exact output")
    cl = sub.choices["cli"]
    cl.add_argument("--cli", type=Path, required=True, help="the built fbngrad")
    cl.add_argument("--python", type=Path, help="a Python with numpy, first on PATH as python3")
    sub.add_parser("self-test")
    args = ap.parse_args()

    if MarkdownIt is None:
        print("check_docs.py: markdown-it-py is not installed (tools/requirements-test.txt; "
              "tools/dev.sh test installs it): skipped")
        return 77
    if args.check == "self-test":
        return self_test()
    with tempfile.TemporaryDirectory() as tmp:
        work = args.work or Path(tmp)
        work.mkdir(parents=True, exist_ok=True)
        if args.check == "links":
            problems, summary = check_links(args.root)
        elif args.check == "example":
            problems, summary = check_example(args.root, args.name, args.compiler, args.include, args.lib,
                                              args.flag, args.expect, work)
        else:
            problems, summary = check_cli(args.root, args.cli, args.python, work)
    for p in problems:
        print(f"FAIL {p}")
    print(f"{args.check}: {len(problems)} problems; {summary}")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
