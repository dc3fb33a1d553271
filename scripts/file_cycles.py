#!/usr/bin/env python3
"""Circles of `use` between the files of each crate (docs/ARCHITECTURE.md: no two files of a crate import each
other, directly or round a longer circle).

    scripts/file_cycles.py [--allow FILE] [CRATES_DIR]      (default: crates/, allow-list scripts/file_cycles.allow)

A file uses another when it names an item defined there: `use crate::a::B`, `super::b::f()`, a child module's
`c::D`. Names are followed through re-exports (`pub use`) to the file that defines them, so a `lib.rs` or
`mod.rs` that only passes names on is not a hub; a `pub use` itself is plumbing, not a use, and a module naming
its own submodules (a `search/mod.rs` choosing among its strategies) owns them rather than imports them. Test code
(`#[cfg(test)]` items and files declared under it) is left out. Prints each circle as `crate: a.rs -> b.rs ->
a.rs` and exits 1 when one is found that the allow-list does not name (one circle per line, in that form, `#`
comments); exits 0 otherwise, and says which allowed circles are gone.
"""

import os
import re
import sys

TOKEN = re.compile(
    r"""(?P<ws>\s+)|(?P<lc>//[^\n]*)|(?P<bc>/\*)|(?P<raw>b?r(?P<hashes>\#*)")|(?P<str>b?"(?:\\.|[^"\\])*")"""
    r"""|(?P<char>b?'(?:\\.|[^'\\])')|(?P<life>'[A-Za-z_][A-Za-z0-9_]*)|(?P<ident>[A-Za-z_][A-Za-z0-9_]*)"""
    r"""|(?P<path>::)|(?P<punct>.)""",
    re.S,
)
ITEM_KINDS = {"struct", "enum", "fn", "trait", "type", "const", "static", "union", "mod"}


def tokens(text):
    """Identifiers, `::` and punctuation of Rust source; comments, strings and chars dropped."""
    out, i = [], 0
    while i < len(text):
        m = TOKEN.match(text, i)
        if m.group("bc"):
            depth, j = 1, m.end()
            while depth and j < len(text):
                if text.startswith("/*", j):
                    depth, j = depth + 1, j + 2
                elif text.startswith("*/", j):
                    depth, j = depth - 1, j + 2
                else:
                    j += 1
            i = j
            continue
        if m.group("raw") is not None:
            end = text.find('"' + m.group("hashes"), m.end())
            i = len(text) if end < 0 else end + 1 + len(m.group("hashes"))
            out.append('""')
            continue
        i = m.end()
        if m.group("ident") or m.group("path"):
            out.append(m.group(0))
        elif m.group("punct"):
            out.append(m.group(0))
        elif m.group("str") or m.group("char"):
            out.append('""')
    return out


def skip_item(toks, i):
    """Index after the item starting at toks[i] (to its `;` or its closing brace)."""
    depth = 0
    while i < len(toks):
        t = toks[i]
        if t == "{":
            depth += 1
        elif t == "}":
            depth -= 1
            if depth == 0:
                return i + 1
        elif t == ";" and depth == 0:
            return i + 1
        i += 1
    return i


def attribute_end(toks, i):
    """Index after the attribute `#[...]` at toks[i], and whether it is `cfg(test)`."""
    j, depth = i + 1, 0
    start = j
    while j < len(toks):
        if toks[j] == "[":
            depth += 1
        elif toks[j] == "]":
            depth -= 1
            if depth == 0:
                break
        j += 1
    body = toks[start + 1 : j]
    return j + 1, body[:4] == ["cfg", "(", "test", ")"]


def use_tree(toks, i, prefix, out):
    """Expands the use tree at toks[i] into paths (lists of segments) appended to out; returns the index after it."""
    path = list(prefix)
    while i < len(toks):
        t = toks[i]
        if t == "{":
            i += 1
            while toks[i] != "}":
                i = use_tree(toks, i, path, out)
                if toks[i] == ",":
                    i += 1
            return i + 1
        if t == "*":
            out.append((path + ["*"], None))
            return i + 1
        if t == "::":
            i += 1
            continue
        if re.match(r"[A-Za-z_]", t):
            path.append(t)
            i += 1
            if i < len(toks) and toks[i] == "as":
                out.append((path, toks[i + 1]))
                return i + 2
            if i >= len(toks) or toks[i] not in ("::",):
                out.append((path, None))
                return i
            continue
        return i
    return i


class Module:
    def __init__(self, path, file):
        self.path = path          # segments from the crate root
        self.file = file          # the file holding it
        self.items = set()        # names defined here
        self.reexports = {}       # name -> path (absolute segments)
        self.globs = []           # absolute paths re-exported with `*`
        self.imports = {}         # name -> absolute path (private `use`, for resolving later paths)
        self.children = set()     # child module names


class Crate:
    def __init__(self, name, src):
        self.name, self.src = name, src
        self.modules = {}         # tuple(path) -> Module
        self.uses = {}            # file -> list of (scope, path)
        self.test_files = set()

    def module_file_path(self, rel):
        parts = rel[:-3].split(os.sep)
        if parts[-1] in ("lib", "main") and len(parts) == 1:
            return ()
        if parts[-1] == "mod":
            parts = parts[:-1]
        return tuple(parts)

    def load(self):
        for root, _, files in os.walk(self.src):
            for f in sorted(files):
                if f.endswith(".rs"):
                    rel = os.path.relpath(os.path.join(root, f), self.src)
                    path = self.module_file_path(rel)
                    self.modules.setdefault(path, Module(path, rel))
        for path, module in list(self.modules.items()):
            if module.file and (module.path == path):
                with open(os.path.join(self.src, module.file), encoding="utf-8") as fh:
                    self.scan(module.file, path, tokens(fh.read()))

    def scan(self, file, scope, toks):
        uses = self.uses.setdefault(file, [])
        stack = []  # inline modules and other braces: (scope to restore or None)
        i, pub, test = 0, False, False
        cur = scope
        while i < len(toks):
            t = toks[i]
            if t == "#" and i + 1 < len(toks) and toks[i + 1] == "[":
                i, is_test = attribute_end(toks, i)
                test = test or is_test
                continue
            if test:
                if t == "mod" and i + 2 < len(toks) and toks[i + 2] == ";":
                    self.test_files.add(cur + (toks[i + 1],))
                    self.modules.setdefault(cur + (toks[i + 1],), Module(cur + (toks[i + 1],), None))
                if t in ("pub",):
                    i += 1
                    continue
                i = skip_item(toks, i)
                test = False
                continue
            if t == "pub":
                pub = True
                i += 1
                if i < len(toks) and toks[i] == "(":
                    while toks[i] != ")":
                        i += 1
                    i += 1
                continue
            if t == "use":
                paths = []
                i = use_tree(toks, i + 1, [], paths)
                module = self.modules[cur]
                for p, alias in paths:
                    absolute = self.absolute(cur, p, module)
                    if absolute is None:
                        continue
                    if p[-1] == "*":
                        if pub:
                            module.globs.append(absolute[:-1])
                        else:
                            uses.append((cur, absolute))
                        continue
                    name = alias or p[-1]
                    if pub:
                        module.reexports[name] = absolute
                    else:
                        module.imports[name] = absolute
                        uses.append((cur, absolute))
                pub = False
                continue
            if t == "mod" and i + 2 < len(toks):
                name = toks[i + 1]
                self.modules[cur].children.add(name)
                if toks[i + 2] == "{":
                    inner = cur + (name,)
                    m = self.modules.setdefault(inner, Module(inner, file))
                    m.file = m.file or file
                    stack.append(cur)
                    cur = inner
                    i += 3
                else:
                    self.modules.setdefault(cur + (name,), Module(cur + (name,), None))
                    i += 3
                pub = False
                continue
            if t in ITEM_KINDS and i + 1 < len(toks) and re.match(r"[A-Za-z_]", toks[i + 1]):
                self.modules[cur].items.add(toks[i + 1])
            if t == "macro_rules" and i + 2 < len(toks):
                self.modules[cur].items.add(toks[i + 2])
            if t == "{":
                stack.append(None)
            elif t == "}":
                if stack:
                    restore = stack.pop()
                    if restore is not None:
                        cur = restore
            elif re.match(r"[A-Za-z_]", t) and i + 1 < len(toks) and toks[i + 1] == "::" and (
                i == 0 or toks[i - 1] != "::"
            ):
                j, path = i, []
                while j < len(toks) and re.match(r"[A-Za-z_]", toks[j]):
                    path.append(toks[j])
                    if j + 1 < len(toks) and toks[j + 1] == "::":
                        j += 2
                    else:
                        break
                uses.append((cur, ("?",) + tuple(path)))
                i = j + 1
                pub = False
                continue
            if t in (";", "}", "{"):
                pub = False
            i += 1

    def absolute(self, scope, path, module):
        """The absolute segments of a `use` path, or None when it leaves the crate."""
        path = list(path)
        if not path:
            return None
        head = path[0]
        if head == "crate":
            return tuple(path[1:])
        if head in ("self", "super"):
            base = list(scope)
            while path and path[0] in ("self", "super"):
                if path.pop(0) == "super":
                    if not base:
                        return None
                    base.pop()
            return tuple(base + path)
        if head in module.children or scope + (head,) in self.modules:
            return tuple(scope) + tuple(path)
        return None

    def resolve(self, path, seen=None):
        """The file defining what `path` (absolute segments) names."""
        seen = seen or set()
        if path in seen:
            return None
        seen.add(path)
        module = ()
        for k, seg in enumerate(path):
            if seg == "*":
                return self.file_of(module)
            if module + (seg,) in self.modules:
                module = module + (seg,)
                continue
            m = self.modules.get(module)
            if m is None:
                return None
            if seg in m.items:
                return self.file_of(module)
            if seg in m.reexports:
                return self.resolve(tuple(m.reexports[seg]) + tuple(path[k + 1 :]), seen)
            for glob in m.globs:
                found = self.resolve(tuple(glob) + (seg,) + tuple(path[k + 1 :]), set(seen))
                if found:
                    return found
            return self.file_of(module)
        return self.file_of(module)

    def owns(self, scope, target):
        """Whether `target` is a file of one of `scope`'s own submodules: a module names the children it declares
        (to dispatch to them, to re-export them) without importing them."""
        inner = self.module_file_path(target)
        return len(inner) > len(scope) and inner[: len(scope)] == scope

    def file_of(self, module):
        m = self.modules.get(module)
        while m is not None and m.file is None and module:
            module = module[:-1]
            m = self.modules.get(module)
        return m.file if m else None

    def edges(self):
        graph = {}
        for file, uses in self.uses.items():
            scope = self.module_file_path(file)
            if scope in self.test_files or any(scope[: k] in self.test_files for k in range(1, len(scope))):
                continue
            targets = graph.setdefault(file, set())
            for cur, path in uses:
                if path and path[0] == "?":
                    rel = list(path[1:])
                    module = self.modules.get(cur)
                    if rel[0] in ("crate", "self", "super") or (module and rel[0] in module.children):
                        path = self.absolute(cur, rel, module)
                    elif module and rel[0] in module.imports:
                        path = tuple(module.imports[rel[0]]) + tuple(rel[1:])
                    else:
                        continue
                    if path is None:
                        continue
                target = self.resolve(tuple(path))
                if target and target != file and not self.owns(scope, target):
                    targets.add(target)
        return graph


def circles(graph):
    """Each elementary circle once (Tarjan's strongly connected components, then one shortest circle per file)."""
    index, low, on, stack, comps, counter = {}, {}, set(), [], [], [0]

    def strong(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                strong(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                comps.append(sorted(comp))

    sys.setrecursionlimit(10000)
    for v in sorted(graph):
        if v not in index:
            strong(v)
    found = set()
    for comp in comps:
        members = set(comp)
        for start in comp:
            # shortest circle through `start` inside its component (breadth first)
            prev, frontier, done = {start: None}, [start], None
            while frontier and done is None:
                nxt = []
                for v in frontier:
                    for w in sorted(graph.get(v, ())):
                        if w not in members:
                            continue
                        if w == start:
                            done = v
                            break
                        if w not in prev:
                            prev[w] = v
                            nxt.append(w)
                    if done is not None:
                        break
                frontier = nxt
            if done is None:
                continue
            cycle, v = [], done
            while v is not None:
                cycle.append(v)
                v = prev[v]
            cycle.reverse()
            k = cycle.index(min(cycle))
            found.add(tuple(cycle[k:] + cycle[:k]))
    return sorted(found)


def crate_circles(crates_dir):
    out = []
    for name in sorted(os.listdir(crates_dir)):
        src = os.path.join(crates_dir, name, "src")
        if not os.path.isdir(src):
            continue
        crate = Crate(name, src)
        crate.load()
        for c in circles(crate.edges()):
            out.append(f"{name}: " + " -> ".join(c + (c[0],)))
    return out


def main(argv):
    allow_file, crates_dir = os.path.join(os.path.dirname(__file__), "file_cycles.allow"), "crates"
    args = list(argv)
    if args[:1] == ["--allow"]:
        allow_file, args = args[1], args[2:]
    if args:
        crates_dir = args[0]
    allowed = set()
    if os.path.exists(allow_file):
        with open(allow_file, encoding="utf-8") as fh:
            allowed = {ln.strip() for ln in fh if ln.strip() and not ln.lstrip().startswith("#")}
    found = crate_circles(crates_dir)
    new = [c for c in found if c not in allowed]
    for c in found:
        print(("allowed (to be broken): " if c in allowed else "CIRCLE: ") + c)
    for gone in sorted(allowed - set(found)):
        print(f"gone from {allow_file}'s list (remove it there): {gone}")
    if new:
        print(f"{len(new)} circle(s) of files: break each (move what both need to a file both use)", file=sys.stderr)
        return 1
    print(f"no circles of files in {crates_dir} but the {len(found)} allowed")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
