#!/usr/bin/env python3
"""The include graph of src/ and include/ against the declared layer order.

The layers, bottom to top, are the LAYERS line of the Makefile; each is a
folder src/<layer>/ holding its .c files and a folder include/<layer>/
holding their headers (the modules' contracts). A header under src/ is a
problem. A file may include headers of its own layer or of a lower one. Fails (exit 1)
naming every #include "x.h" of a header that lives in a higher layer, every
cycle between modules (a module is foo.c with foo.h: auth.c including
http.h while http.c includes auth.h is a cycle), and every quoted include
that names no header of the tree. The headers the Makefile generates
(its $(BUILD)/gen/*.h targets) are skipped.

  --report   also prints the figures of the tree: files per folder, the
             largest files and functions, the levels of the module graph
             (its longest chain of includes, cycles folded into one node)
             and the upward edges; the check still decides the status.
  --root D   checks the tree at D instead of this checkout.
  --self-test  checks small trees built in a temporary folder: a clean one
             passes, a header included upward, a cycle and an unknown
             header fail, then checks this checkout.
"""
import os
import re
import sys
import tempfile

INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)


def generated(root):
    """The headers root's Makefile generates: its $(BUILD)/gen/<name>.h targets."""
    with open(os.path.join(root, "Makefile")) as f:
        return set(re.findall(r"^\$\(BUILD\)/gen/([\w.-]+\.h)\s*:", f.read(), re.M))


def read_layers(root):
    """The LAYERS of root's Makefile, bottom first."""
    with open(os.path.join(root, "Makefile")) as f:
        for line in f:
            m = re.match(r"^LAYERS\s*:?=\s*(.*)$", line)
            if m:
                return m.group(1).split()
    raise SystemExit("check-layers: no LAYERS line in %s/Makefile" % root)


def scan(root, layers):
    """{path: (layer, [included names])} for every .c and .h of the layers."""
    files = {}
    for top in ("include", "src"):
        for layer in layers:
            d = os.path.join(root, top, layer)
            if not os.path.isdir(d):
                continue
            for name in sorted(os.listdir(d)):
                if name.endswith((".c", ".h")):
                    path = "%s/%s/%s" % (top, layer, name)
                    with open(os.path.join(root, path), errors="replace") as f:
                        text = f.read()
                    files[path] = (layer, INCLUDE.findall(text), text)
    return files


def misplaced(files):
    """Headers under src/ and sources under include/."""
    return ["%s: a header belongs in include/<layer>/" % p for p in sorted(files)
            if p.startswith("src/") and p.endswith(".h")] + \
           ["%s: a source belongs in src/<layer>/" % p for p in sorted(files)
            if p.startswith("include/") and p.endswith(".c")]


def resolve(name, including, files, layers):
    """The path the compiler finds for #include "name" in including: its own
    folder first, then the layers in -I order."""
    own = os.path.join(os.path.dirname(including), name)
    if own in files:
        return own
    for layer in layers:
        p = "include/%s/%s" % (layer, os.path.basename(name))
        if p in files and "/" not in name:
            return p
    return None


def module(path):
    """<layer>/<name>: src/lib/log.c and include/lib/log.h are one module."""
    return os.path.splitext(path.split("/", 1)[1])[0]


def edges(files, layers, gen=frozenset()):
    """[(from path, to path)] and the problems of unknown headers."""
    out, problems = [], []
    for path, (_, incs, _) in sorted(files.items()):
        for name in incs:
            if os.path.basename(name) in gen:
                continue
            to = resolve(name, path, files, layers)
            if to is None:
                problems.append('%s: #include "%s" names no header of include/' % (path, name))
            else:
                out.append((path, to))
    return out, problems


def upward(files, layers, es):
    rank = {l: i for i, l in enumerate(layers)}
    return [(a, b) for a, b in es if rank[files[b][0]] > rank[files[a][0]]]


def sccs(nodes, graph):
    """Tarjan's strongly connected components, iteratively."""
    index, low, on, stack, out = {}, {}, set(), [], []
    counter = [0]
    for start in sorted(nodes):
        if start in index:
            continue
        work = [(start, iter(sorted(graph.get(start, ()))))]
        index[start] = low[start] = counter[0]
        counter[0] += 1
        stack.append(start)
        on.add(start)
        while work:
            v, it = work[-1]
            advanced = False
            for w in it:
                if w not in index:
                    index[w] = low[w] = counter[0]
                    counter[0] += 1
                    stack.append(w)
                    on.add(w)
                    work.append((w, iter(sorted(graph.get(w, ())))))
                    advanced = True
                    break
                if w in on:
                    low[v] = min(low[v], index[w])
            if advanced:
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                comp = []
                while True:
                    w = stack.pop()
                    on.discard(w)
                    comp.append(w)
                    if w == v:
                        break
                out.append(sorted(comp))
    return out


def module_graph(es):
    graph = {}
    for a, b in es:
        ma, mb = module(a), module(b)
        if ma != mb:
            graph.setdefault(ma, set()).add(mb)
    return graph


def levels(files, es):
    """The number of levels of the module graph: 1 + its longest chain of
    includes, each cycle folded into one node."""
    graph = module_graph(es)
    nodes = {module(p) for p in files}
    comps = sccs(nodes, graph)
    comp_of = {m: i for i, c in enumerate(comps) for m in c}
    cg = {}
    for a, bs in graph.items():
        for b in bs:
            if comp_of[a] != comp_of[b]:
                cg.setdefault(comp_of[a], set()).add(comp_of[b])
    depth = {}
    # Tarjan emits components in reverse topological order: successors first.
    for i in range(len(comps)):
        depth[i] = 1 + max((depth[j] for j in cg.get(i, ())), default=0)
    return max(depth.values(), default=0)


def check(root):
    layers = read_layers(root)
    files = scan(root, layers)
    es, problems = edges(files, layers, generated(root))
    problems += misplaced(files)
    for a, b in upward(files, layers, es):
        problems.append("%s (layer %s) includes %s of the higher layer %s"
                        % (a, files[a][0], os.path.basename(b), files[b][0]))
    graph = module_graph(es)
    for comp in sccs({module(p) for p in files}, graph):
        if len(comp) > 1:
            problems.append("include cycle between modules: %s" % " <-> ".join(comp))
    return layers, files, es, problems


FUNC_START = re.compile(r"^[A-Za-z_][^=;#]*?\b(\w+)\s*\(")


def functions(text):
    """[(lines, name)] of the function definitions of a C file: a line at
    column 0 naming a function, then the "{" and "}" at column 0 that open
    and close its body."""
    out, lines = [], text.split("\n")
    i = 0
    while i < len(lines):
        m = FUNC_START.match(lines[i])
        if m and not lines[i].startswith("typedef"):
            j = i
            while j < len(lines) and not lines[j].startswith("{") \
                    and not lines[j].rstrip().endswith((";", "}")):
                j += 1
            if j < len(lines) and lines[j].startswith("{"):
                k = j + 1
                while k < len(lines) and not lines[k].startswith("}"):
                    k += 1
                out.append((k - i + 1, m.group(1)))
                i = k + 1
                continue
        i += 1
    return out


def report(root, layers, files, es):
    print("files per folder:")
    for layer in layers:
        print("  src/%-9s %3d   include/%-9s %3d"
              % (layer + "/", sum(1 for p in files if files[p][0] == layer and p.startswith("src/")),
                 layer + "/", sum(1 for p in files if files[p][0] == layer and p.startswith("include/"))))
    sizes = sorted(((t.count("\n"), p) for p, (_, _, t) in files.items()), reverse=True)
    print("largest files (lines):")
    for n, p in sizes[:5]:
        print("  %5d  %s" % (n, p))
    funcs = sorted(((n, name, p) for p, (_, _, t) in files.items() if p.endswith(".c")
                    for n, name in functions(t)), reverse=True)
    print("largest functions (lines):")
    for n, name, p in funcs[:5]:
        print("  %5d  %s (%s)" % (n, name, p))
    up = upward(files, layers, es)
    print("include graph: %d modules, %d edges between modules, %d levels, %d upward edges"
          % (len({module(p) for p in files}), sum(len(v) for v in module_graph(es).values()),
             levels(files, es), len(up)))
    for a, b in up:
        print("  upward: %s -> %s" % (a, b))
    cycles = [c for c in sccs({module(p) for p in files}, module_graph(es)) if len(c) > 1]
    print("module cycles: %d" % len(cycles))
    for c in cycles:
        print("  cycle: %s" % " <-> ".join(c))


def run(root, want_report):
    layers, files, es, problems = check(root)
    if want_report:
        report(root, layers, files, es)
    for p in problems:
        print("check-layers: " + p, file=sys.stderr)
    return 1 if problems else 0


def write_tree(d, layers, tree):
    with open(os.path.join(d, "Makefile"), "w") as f:
        f.write("LAYERS := %s\n$(BUILD)/gen/build_info.h: FORCE\n" % " ".join(layers))
    for path, text in tree.items():
        os.makedirs(os.path.dirname(os.path.join(d, path)), exist_ok=True)
        with open(os.path.join(d, path), "w") as f:
            f.write(text)


def self_test():
    base = {
        "include/lib/json.h": "#include <stdio.h>\n",
        "src/lib/json.c": '#include "json.h"\n',
        "include/http/http.h": '#include "json.h"\n',
        "src/http/http.c": '#include "http.h"\n#include "build_info.h"\n',
    }
    cases = [
        ("a clean tree", {}, None),
        ("a header included upward",
         {"src/lib/json.c": '#include "json.h"\n#include "http.h"\n'}, "higher layer http"),
        ("a cycle between modules of one layer",
         {"include/lib/log.h": "", "src/lib/log.c": '#include "json.h"\n',
          "src/lib/json.c": '#include "json.h"\n#include "log.h"\n'},
         "include cycle between modules"),
        ("a header that does not exist", {"src/http/http.c": '#include "nope.h"\n'},
         "names no header"),
        ("a header under src/", {"src/http/extra.h": ""}, "belongs in include/"),
    ]
    ok = True
    for what, change, expect in cases:
        with tempfile.TemporaryDirectory() as d:
            tree = dict(base)
            tree.update(change)
            write_tree(d, ["lib", "http"], tree)
            problems = check(d)[3]
            passed = (not problems) if expect is None else \
                any(expect in p for p in problems)
            if not passed:
                print("check-layers self-test: %s: expected %s, got %s"
                      % (what, expect or "no problem", problems or "none"), file=sys.stderr)
                ok = False
    if not ok:
        return 1
    print("check-layers: self-test ok")
    return 0


def main(argv):
    root = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
    want_report = "--report" in argv
    if "--root" in argv:
        root = argv[argv.index("--root") + 1]
    if "--self-test" in argv and self_test() != 0:
        return 1
    rc = run(root, want_report)
    if rc == 0:
        print("check-layers: ok (%s)" % " < ".join(read_layers(root)))
    return rc


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
