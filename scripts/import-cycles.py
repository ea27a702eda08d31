#!/usr/bin/env python3
"""Fails when a crate's modules import each other in a circle.

The module tree of each crate under crates/ is read from its files
(`src/lib.rs` or `src/main.rs`, `foo.rs` or `foo/mod.rs`, and inline
`mod foo { ... }` blocks are part of their file's module). Every path a
module names (`use` trees and paths in code: `crate::a::b`, `super::x`,
`self::y`, and the bare names of its own child modules) is resolved through
`pub use` re-exports to the module that defines the item.

A parent and its children are one unit: a module may use its ancestors and
its descendants freely. A circle is between siblings: under each module, the
children are the nodes, and child A depends on child B when anything in A's
subtree uses something defined in B's subtree. A strongly connected component
with more than one child is reported, with one path of uses per edge so you
can see where to cut it. Test code (`#[cfg(test)]` modules and files) is left
out: a test may look anywhere.

Usage: scripts/import-cycles.py [crate-dir ...]   (default: every crate)
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def strip_comments(text: str) -> str:
    """Removes comments and the contents of string and char literals."""
    out = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("//", i):
            j = text.find("\n", i)
            i = n if j < 0 else j
        elif text.startswith("/*", i):
            depth, i = 1, i + 2
            while i < n and depth:
                if text.startswith("/*", i):
                    depth, i = depth + 1, i + 2
                elif text.startswith("*/", i):
                    depth, i = depth - 1, i + 2
                else:
                    i += 1
        elif c == "r" and re.match(r'r#*"', text[i:i + 10]) and not (i and (text[i - 1].isalnum() or text[i - 1] == "_")):
            m = re.match(r'r(#*)"', text[i:])
            end = text.find('"' + m.group(1), i + len(m.group(0)))
            out.append('""')
            i = n if end < 0 else end + 1 + len(m.group(1))
        elif c == '"':
            j = i + 1
            while j < n and text[j] != '"':
                j += 2 if text[j] == "\\" else 1
            out.append('""')
            i = j + 1
        elif c == "'" and re.match(r"'(\\.|[^\\'])'", text[i:i + 4]) or (c == "'" and text.startswith("'\\", i)):
            m = re.match(r"'(\\u\{[0-9a-fA-F]+\}|\\.|[^\\'])'", text[i:])
            if m:
                out.append("' '")
                i += len(m.group(0))
            else:
                out.append(c)
                i += 1
        else:
            out.append(c)
            i += 1
    return "".join(out)


def block_end(text: str, open_at: int) -> int:
    """The index just past the `}` closing the `{` at `open_at`."""
    depth = 0
    for j in range(open_at, len(text)):
        if text[j] == "{":
            depth += 1
        elif text[j] == "}":
            depth -= 1
            if depth == 0:
                return j + 1
    return len(text)


MOD_RE = re.compile(r"((?:#\[[^\]]*\]\s*)*)(?:pub(?:\([^)]*\))?\s+)?mod\s+(\w+)\s*([;{])")
PATH_ATTR = re.compile(r'#\[path\s*=\s*""\]')


class Module:
    def __init__(self, path: tuple[str, ...], file: Path):
        self.path = path
        self.file = file
        self.children: dict[str, Module] = {}
        self.text = ""  # its own code, child modules cut out
        self.uses: list[tuple[str, ...]] = []  # absolute paths it names
        self.exports: dict[str, tuple[str, ...]] = {}  # name -> absolute path (pub use)
        self.glob_exports: list[tuple[str, ...]] = []
        self.items: set[str] = set()


def load(crate: Path) -> Module | None:
    src = crate / "src"
    for main in ("lib.rs", "main.rs"):
        if (src / main).exists():
            root = Module((), src / main)
            parse(root, (src / main).read_text(), src)
            return root
    return None


def parse(module: Module, raw: str, directory: Path) -> None:
    """Fills `module` from its file's text; `directory` holds its child files."""
    text = strip_comments(raw)
    kept = []
    pos = 0
    for m in MOD_RE.finditer(text):
        if m.start() < pos:
            continue
        attrs, name, kind = m.group(1), m.group(2), m.group(3)
        is_test = "cfg(test)" in attrs or "cfg(all(test" in attrs
        if kind == "{":
            end = block_end(text, m.end() - 1)
            kept.append(text[pos:m.start()])
            pos = end
            if is_test:
                continue
            child = Module(module.path + (name,), module.file)
            module.children[name] = child
            parse(child, text[m.end():end - 1], directory / name)
        else:
            kept.append(text[pos:m.start()])
            pos = m.end()
            if is_test:
                continue
            for candidate in (directory / f"{name}.rs", directory / name / "mod.rs"):
                if candidate.exists():
                    child = Module(module.path + (name,), candidate)
                    module.children[name] = child
                    parse(child, candidate.read_text(), directory / name)
                    break
    kept.append(text[pos:])
    module.text = "".join(kept)
    # Items it defines (for resolving names through re-exports).
    for m in re.finditer(r"\b(?:fn|struct|enum|trait|type|const|static|union|macro_rules!)\s+(\w+)", module.text):
        module.items.add(m.group(1))


def split_top(s: str) -> list[str]:
    parts, depth, cur = [], 0, []
    for c in s:
        if c == "{":
            depth += 1
        elif c == "}":
            depth -= 1
        if c == "," and depth == 0:
            parts.append("".join(cur))
            cur = []
        else:
            cur.append(c)
    parts.append("".join(cur))
    return [p.strip() for p in parts if p.strip()]


def expand_use(tree: str, prefix: list[str]) -> list[tuple[list[str], str | None]]:
    """`a::{b, c::d as e}` -> [(path, alias)]; a glob ends in `*`."""
    tree = tree.strip()
    if "{" in tree:
        head, _, rest = tree.partition("{")
        head_parts = [p.strip() for p in head.split("::") if p.strip()]
        body = rest[: rest.rfind("}")]
        out = []
        for part in split_top(body):
            out.extend(expand_use(part, prefix + head_parts))
        return out
    alias = None
    m = re.match(r"(.*?)\s+as\s+(\w+)$", tree, re.S)
    if m:
        tree, alias = m.group(1), m.group(2)
    parts = prefix + [p.strip() for p in tree.split("::") if p.strip()]
    if parts and parts[-1] == "self":
        parts = parts[:-1]
    return [(parts, alias)]


USE_RE = re.compile(r"\b(pub(?:\([^)]*\))?\s+)?use\s+([^;]+);")
PATH_RE = re.compile(r"(?<![\w:])((?:crate|super|self)(?:::\w+)+)")


def absolute(module: Module, parts: list[str]) -> tuple[str, ...] | None:
    """A path as named in `module`, made absolute within the crate (or None)."""
    if not parts:
        return None
    base = list(module.path)
    head = parts[0]
    if head == "crate":
        return tuple(parts[1:])
    if head in ("super", "self"):
        i = 0
        while i < len(parts) and parts[i] in ("super", "self"):
            if parts[i] == "super":
                base = base[:-1]
            i += 1
        return tuple(base + parts[i:])
    if head in module.children:
        return tuple(base + parts)
    return None


def collect(module: Module, all_modules: list[Module]) -> None:
    all_modules.append(module)
    text = module.text
    for m in USE_RE.finditer(text):
        public = bool(m.group(1)) and "(" not in (m.group(1) or "")
        visible = bool(m.group(1))
        for parts, alias in expand_use(m.group(2), []):
            path = absolute(module, parts)
            if path is None:
                continue
            if parts[-1] == "*":
                path = path[:-1]
                if visible:
                    module.glob_exports.append(path)
                module.uses.append(path)
                continue
            module.uses.append(path)
            if visible:
                module.exports[alias or parts[-1]] = path
    no_use = USE_RE.sub("", text)
    for m in PATH_RE.finditer(no_use):
        path = absolute(module, m.group(1).split("::"))
        if path is not None:
            module.uses.append(path)
    for m in re.finditer(r"(?<![\w:])(\w+)::\w+", no_use):
        if m.group(1) in module.children:
            module.uses.append(module.path + (m.group(1),) + (m.group(0).split("::")[1],))
    for child in module.children.values():
        collect(child, all_modules)


def find(root: Module, path: tuple[str, ...]) -> Module:
    node = root
    for p in path:
        node = node.children[p]
    return node


def resolve(root: Module, path: tuple[str, ...], depth: int = 0) -> tuple[str, ...]:
    """The module that defines what `path` names, following re-exports."""
    node, i = root, 0
    while i < len(path) and path[i] in node.children:
        node = node.children[path[i]]
        i += 1
    if i == len(path) or depth > 20:
        return node.path
    name = path[i]
    if name in node.items:
        return node.path
    if name in node.exports:
        target = node.exports[name]
        return resolve(root, target + path[i + 1:], depth + 1)
    for glob in node.glob_exports:
        target = resolve(root, glob, depth + 1)
        try:
            owner = find(root, target)
        except KeyError:
            continue
        if name in owner.items or name in owner.exports or name in owner.children:
            return resolve(root, target + path[i:], depth + 1)
    return node.path


def cycles(crate: Path) -> list[str]:
    root = load(crate)
    if root is None:
        return []
    modules: list[Module] = []
    collect(root, modules)
    # edges[parent][(a, b)] = example (from module, to module)
    edges: dict[tuple[str, ...], dict[tuple[str, str], tuple]] = {}
    for module in modules:
        for use in module.uses:
            target = resolve(root, use)
            src, dst = module.path, target
            k = 0
            while k < len(src) and k < len(dst) and src[k] == dst[k]:
                k += 1
            if k == len(src) or k == len(dst):
                continue  # an ancestor or a descendant: the same unit
            parent = src[:k]
            key = (src[k], dst[k])
            edges.setdefault(parent, {}).setdefault(key, (src, dst, "::".join(use)))
    found = []
    for parent, pairs in sorted(edges.items()):
        graph: dict[str, set[str]] = {}
        for a, b in pairs:
            graph.setdefault(a, set()).add(b)
            graph.setdefault(b, set())
        for component in scc(graph):
            if len(component) < 2:
                continue
            where = "::".join(("crate",) + parent)
            lines = [f"{crate.name}: under {where}: {' <-> '.join(sorted(component))}"]
            for (a, b), (src, dst, use) in sorted(pairs.items()):
                if a in component and b in component:
                    lines.append(f"    {a} -> {b}: {'::'.join(src) or 'crate'} uses {use}")
            found.append("\n".join(lines))
    return found


def scc(graph: dict[str, set[str]]) -> list[set[str]]:
    index, low, stack, on, out = {}, {}, [], set(), []
    counter = [0]

    def visit(v: str) -> None:
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = set()
            while True:
                w = stack.pop()
                on.discard(w)
                comp.add(w)
                if w == v:
                    break
            out.append(comp)

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def main() -> int:
    sys.setrecursionlimit(10000)
    crates = [Path(a) for a in sys.argv[1:]] or sorted(p for p in (ROOT / "crates").iterdir() if (p / "Cargo.toml").exists())
    found = []
    for crate in crates:
        found.extend(cycles(crate))
    if found:
        print("Import circles (modules that use each other; cut one edge of each):\n", file=sys.stderr)
        print("\n".join(found), file=sys.stderr)
        return 1
    print(f"No import circles in {len(crates)} crates.")
    return 0


if __name__ == "__main__":
    sys.exit(main())
