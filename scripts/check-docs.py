#!/usr/bin/env python3
"""The README and docs/ against the tree, for `make lint`:

- every relative link of README.md and docs/*.md names a file that exists,
  and every #anchor one of the target's headings (as GitHub makes anchors);
- the README's Layout block names every folder of src/ and every top-level
  entry of the tree, and every path it names exists;
- commands are in ```sh blocks (which make test-readme runs), not in
  ```bash/```console blocks or blocks of "$ command" lines;
- the README stays within 400 lines.

usage: check-docs.py [--self-test]     exit 1 with one line per finding.
"""
import os
import re
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
README_MAX_LINES = 400
# Top-level entries the Layout need not name: the project's own files.
UNLISTED = {"README.md", "Makefile", "LICENSE", "include", "build", "var"}


def strip_code(text):
    """The text without fenced blocks and inline code, line count kept."""
    out, fence = [], False
    for line in text.split("\n"):
        if line.startswith("```"):
            fence = not fence
            out.append("")
            continue
        out.append("" if fence else re.sub(r"`[^`]*`", "", line))
    return "\n".join(out)


def anchors(text):
    """GitHub's anchors of a Markdown text's headings."""
    seen, out = {}, set()
    for line in strip_code_keep_headings(text):
        m = re.match(r"^#{1,6} (.*)$", line)
        if not m:
            continue
        a = m.group(1).strip().lower()
        a = re.sub(r"[^\w\- ]", "", a).replace(" ", "-")
        n = seen.get(a, 0)
        seen[a] = n + 1
        out.add(a if n == 0 else f"{a}-{n}")
    return out


def strip_code_keep_headings(text):
    fence = False
    for line in text.split("\n"):
        if line.startswith("```"):
            fence = not fence
            continue
        if not fence:
            yield line


def check_links(root, pages):
    errs = []
    cache = {}
    for page in pages:
        path = os.path.join(root, page)
        with open(path, encoding="utf-8") as f:
            text = f.read()
        for n, line in enumerate(strip_code(text).split("\n"), 1):
            for target in re.findall(r"\]\(([^)\s]+)\)", line):
                if re.match(r"^[a-z]+:", target):
                    continue
                file, _, anchor = target.partition("#")
                dest = os.path.normpath(os.path.join(os.path.dirname(path), file)) if file else path
                if not os.path.exists(dest):
                    errs.append(f"{page}:{n}: link to {target}: no such file")
                    continue
                if anchor:
                    if not dest.endswith(".md"):
                        errs.append(f"{page}:{n}: link to {target}: an anchor in a file that is not Markdown")
                        continue
                    if dest not in cache:
                        with open(dest, encoding="utf-8") as f:
                            cache[dest] = anchors(f.read())
                    if anchor not in cache[dest]:
                        errs.append(f"{page}:{n}: link to {target}: no heading with that anchor")
    return errs


def check_blocks(root, pages):
    """Commands live in ```sh blocks, which make test-readme runs: a block
    of another shell language, or one whose lines are "$ command", is not."""
    errs = []
    for page in pages:
        with open(os.path.join(root, page), encoding="utf-8") as f:
            lines = f.read().split("\n")
        fence = None
        for n, line in enumerate(lines, 1):
            if line.startswith("```"):
                if fence is None:
                    fence, info = n, line[3:].strip()
                    if info in ("bash", "shell", "console", "shell-session", "zsh"):
                        errs.append(f"{page}:{n}: a ```{info} block: commands go in ```sh blocks")
                else:
                    fence = None
                continue
            if fence is not None and info == "" and line.startswith("$ "):
                errs.append(f"{page}:{fence}: a block of \"$ command\" lines: make it a ```sh block")
                fence = -1
    return errs


def layout_paths(readme):
    lines = readme.split("\n")
    try:
        start = lines.index("## Layout")
    except ValueError:
        return None
    block, fence = [], False
    for line in lines[start + 1:]:
        if line.startswith("```"):
            if fence:
                break
            fence = True
            continue
        if fence and line and not line[0].isspace():
            block.append(line.split()[0])
        if not fence and line.startswith("## "):
            break
    return block


def check_layout(root, readme, tracked):
    paths = layout_paths(readme)
    if not paths:
        return ["README.md: no Layout block under \"## Layout\""]
    errs = []
    for p in paths:
        if not os.path.exists(os.path.join(root, p)):
            errs.append(f"README.md Layout: {p} does not exist")
    named = {p.rstrip("/") for p in paths}
    for d in sorted({t.split("/")[1] for t in tracked if t.startswith("src/") and t.count("/") >= 2}):
        if f"src/{d}" not in named:
            errs.append(f"README.md Layout: src/{d}/ is not named")
    tops = {t.split("/")[0] for t in tracked if not t.startswith(".")}
    for top in sorted(tops - UNLISTED):
        if top not in named and not any(p.startswith(top + "/") for p in named):
            errs.append(f"README.md Layout: {top} is not named")
    return errs


def check(root):
    tracked = subprocess.run(["git", "-C", root, "ls-files"], capture_output=True, text=True,
                             check=True).stdout.split()
    pages = ["README.md"] + sorted(f"docs/{f}" for f in os.listdir(os.path.join(root, "docs"))
                                   if f.endswith(".md"))
    with open(os.path.join(root, "README.md"), encoding="utf-8") as f:
        readme = f.read()
    errs = check_links(root, pages) + check_blocks(root, pages) + check_layout(root, readme, tracked)
    n = readme.count("\n")
    if n > README_MAX_LINES:
        errs.append(f"README.md: {n} lines, more than {README_MAX_LINES}: move reference to docs/")
    return errs


def self_test():
    """Each broken copy must be caught."""
    with tempfile.TemporaryDirectory() as d:
        os.makedirs(f"{d}/docs")
        os.makedirs(f"{d}/src/lib")
        os.makedirs(f"{d}/src/app")
        good = ("# t\n\n## Some heading, with `code`\n\n[a](docs/x.md#second-part) [b](#some-heading-with-code)\n\n"
                "## Layout\n\n```\nsrc/lib/   x\nsrc/app/   y\ndocs/      z\n```\n")
        files = {"README.md": good, "docs/x.md": "# X\n\n## Second part\n\n[back](../README.md#layout)\n",
                 "src/lib/a.c": "", "src/app/b.c": ""}
        for name, text in files.items():
            with open(f"{d}/{name}", "w", encoding="utf-8") as f:
                f.write(text)
        subprocess.run(["git", "-C", d, "init", "-q"], check=True)
        subprocess.run(["git", "-C", d, "add", "."], check=True)
        if check(d):
            return [f"self-test: a good tree fails: {check(d)}"]
        mutations = [
            ("README.md", good.replace("#second-part", "#third-part")),
            ("README.md", good.replace("docs/x.md", "docs/y.md")),
            ("README.md", good.replace("(#some-heading-with-code)", "(#some-heading)")),
            ("README.md", good.replace("src/app/   y\n", "")),
            ("README.md", good.replace("docs/      z\n", "docs/      z\ndeploy/    gone\n")),
            ("README.md", good.replace("docs/      z\n", "")),
            ("README.md", good + "\n" * 400),
            ("README.md", good + "\n```\n$ paycallback --check-config\n```\n"),
            ("README.md", good + "\n```bash\nmake run\n```\n"),
        ]
        errs = []
        for name, text in mutations:
            with open(f"{d}/{name}", "w", encoding="utf-8") as f:
                f.write(text)
            if not check(d):
                errs.append(f"self-test: a broken copy passes: {text[:120]!r}")
            with open(f"{d}/{name}", "w", encoding="utf-8") as f:
                f.write(files[name])
        return errs


def main():
    errs = self_test() if "--self-test" in sys.argv[1:] else []
    errs += check(ROOT)
    for e in errs:
        print(f"check-docs: {e}", file=sys.stderr)
    if errs:
        sys.exit(1)
    print("check-docs: links, anchors and Layout ok")


if __name__ == "__main__":
    main()
