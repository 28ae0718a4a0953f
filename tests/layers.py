#!/usr/bin/env python3
"""tests/layers.py - fails when a dependency between vramctl's files goes up
or round in a circle.

A dependency is an `#include "..."` line, an `#include <...>` that names a
file of the tree (`<vramctl/registry.h>`, `<hook/hook.h>`: the compiler finds
them as it finds quoted ones, through -I), or a call (a symbol that one
object file of the build uses and another defines, read with nm). A node is
a file stem: foo.c and foo.h are one node "foo" of their directory.

The rules, written once:
  * src/LAYERS orders the modules (src/<name>/, and sim/ and slurm/ at the
    top of the tree), top first, one layer a line. A module may depend on
    modules of lower lines only; modules of one line are peers and do not
    depend on each other.
  * A directory's own LAYERS file orders its nodes the same way, top first.
    A node may depend on nodes of its own line or lower lines; every node of
    the directory is listed once.
  * No directory's nodes form a cycle, whether it has a LAYERS file or not.
  * tests/ and bench/ are read too (their includes), as the tree's top
    (above every module of src/LAYERS): they may use any module, and
    nothing of src/, sim/ or slurm/ may include them.

Usage: tests/layers.py [--root DIR] [--objs BUILD_DIR]
Without --objs (or where an object is missing) only the includes are read.
Exit 0 when every rule holds, 1 with one line per broken rule otherwise.
"""
import argparse
import os
import re
import subprocess
import sys

SOURCE_DIRS = ("src", "sim", "slurm", "include", "tests", "bench")
INCLUDE_PATHS = (".", "src", "include")
# Quoted, or in angle brackets (a system header resolves to no file here).
INCLUDE_RE = re.compile(r'^\s*#\s*include\s+["<]([^">]+)[">]', re.M)
# Above every module of src/LAYERS: they use the tree, nothing uses them.
TOP_MODULES = ["tests", "bench"]


def read_layers(path):
    """The LAYERS file at path as a list of lists of names, top first."""
    layers = []
    with open(path, encoding="utf-8") as f:
        for line in f:
            line = line.split("#", 1)[0].split()
            if line:
                layers.append(line)
    return layers


def module_of(rel):
    """The module a file belongs to: src/<m>/..., or sim, slurm, include."""
    parts = rel.split("/")
    if parts[0] == "src" and len(parts) > 2:
        return parts[1]
    return parts[0]


def node_of(rel):
    """(directory, stem) of a file path relative to the root."""
    d, base = os.path.split(rel)
    return d, base.split(".", 1)[0]


def source_files(root):
    for top in SOURCE_DIRS:
        for dirpath, _, files in os.walk(os.path.join(root, top)):
            for name in sorted(files):
                if name.endswith((".c", ".h", ".def")):
                    yield os.path.relpath(os.path.join(dirpath, name), root)


def resolve_include(root, rel, target):
    candidates = [os.path.join(os.path.dirname(rel), target)]
    # tests/ and bench/ also reach the tree's root (-I. and -Itests).
    candidates += [os.path.join(p, target) for p in INCLUDE_PATHS + ("tests",)]
    for c in candidates:
        c = os.path.normpath(c)
        if os.path.isfile(os.path.join(root, c)):
            return c
    return None


def include_edges(root, files):
    edges = {}
    for rel in files:
        with open(os.path.join(root, rel), encoding="utf-8", errors="replace") as f:
            text = f.read()
        for target in INCLUDE_RE.findall(text):
            dep = resolve_include(root, rel, target)
            if dep is not None and node_of(dep) != node_of(rel):
                edges.setdefault((node_of(rel), node_of(dep)), f"{rel} includes {dep}")
    return edges


def nm(path, defined):
    """The global symbols an object defines, or those it uses undefined."""
    args = ["nm", "-P", "--defined-only" if defined else "--undefined-only", path]
    out = subprocess.run(args, capture_output=True, text=True, check=False).stdout
    syms = set()
    for line in out.splitlines():
        f = line.split()
        # A lower-case type (but for i and u) is local to its object.
        if len(f) >= 2 and (not defined or f[1].isupper() or f[1] in "iu"):
            syms.add(f[0])
    return syms


def call_edges(root, objs, files):
    """Edges from an object that uses a symbol to the one that defines it."""
    sources = [f for f in files if f.endswith(".c")]
    defs, uses = {}, {}
    for rel in sources:
        obj = os.path.join(objs, rel[:-2] + ".o")
        if not os.path.isfile(obj):
            continue
        for s in sorted(nm(obj, True)):
            defs.setdefault(s, []).append(rel)
        uses[rel] = nm(obj, False)
    edges = {}
    for rel, syms in uses.items():
        for s in sorted(syms):
            definers = defs.get(s, [])
            # A symbol several programs define (main, a test double) says
            # nothing about which one this file calls.
            if len(definers) != 1:
                continue
            dep = definers[0]
            if node_of(dep) != node_of(rel):
                edges.setdefault((node_of(rel), node_of(dep)), f"{rel} uses {s} of {dep}")
    return edges


def cycles(nodes, edges):
    """Strongly connected components with more than one node (Tarjan)."""
    succ = {n: [] for n in nodes}
    for a, b in edges:
        succ[a].append(b)
    index, low, stack, on, out = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in succ[v]:
            if w not in index:
                visit(w)
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
                out.append(sorted(comp))

    sys.setrecursionlimit(10000)
    for v in sorted(nodes):
        if v not in index:
            visit(v)
    return out


def rank_map(layers, where, errors):
    rank = {}
    for i, line in enumerate(layers):
        for name in line:
            if name in rank:
                errors.append(f"{where}: '{name}' is listed twice")
            rank[name] = i
    return rank


def check(root, objs):
    files = list(source_files(root))
    edges = include_edges(root, files)
    if objs:
        # Calls within the product only: test programs define stand-ins
        # (fcntl, vr__log) that the product's objects "use" by name.
        product = [f for f in files if module_of(f) not in TOP_MODULES]
        for k, v in call_edges(root, objs, product).items():
            edges.setdefault(k, v)
    errors = []

    # Modules.
    mod_layers = read_layers(os.path.join(root, "src", "LAYERS"))
    mod_layers = [TOP_MODULES] + [l for l in mod_layers if l != TOP_MODULES]
    mod_rank = rank_map(mod_layers, "src/LAYERS", errors)
    for rel in files:
        m = module_of(rel)
        if m not in mod_rank:
            errors.append(f"src/LAYERS: module '{m}' ({rel}) is not listed")
            mod_rank[m] = -1
    for (a, b), why in sorted(edges.items()):
        ma, mb = module_of(a[0] + "/x"), module_of(b[0] + "/x")
        if ma != mb and mod_rank[ma] >= mod_rank[mb] >= 0:
            kind = "a peer" if mod_rank[ma] == mod_rank[mb] else "above it"
            errors.append(f"module {ma} depends on {mb}, {kind} (src/LAYERS): {why}")

    # Directories.
    by_dir = {}
    for rel in files:
        d, stem = node_of(rel)
        by_dir.setdefault(d, set()).add(stem)
    for d, stems in sorted(by_dir.items()):
        nodes = {(d, s) for s in stems}
        local = {k: v for k, v in edges.items() if k[0] in nodes and k[1] in nodes}
        for comp in cycles(nodes, local):
            names = " ".join(s for _, s in comp)
            whys = "; ".join(v for (a, b), v in sorted(local.items())
                             if a in comp and b in comp)
            errors.append(f"{d}: cycle among {names}: {whys}")
        path = os.path.join(root, d, "LAYERS")
        if not os.path.isfile(path):
            continue
        rank = rank_map(read_layers(path), f"{d}/LAYERS", errors)
        for s in sorted(stems - rank.keys()):
            errors.append(f"{d}/LAYERS: '{s}' is not listed")
        for s in sorted(rank.keys() - stems):
            errors.append(f"{d}/LAYERS: '{s}' names no file")
        for (a, b), why in sorted(local.items()):
            if a[1] in rank and b[1] in rank and rank[a[1]] > rank[b[1]]:
                errors.append(f"{d}: {a[1]} depends on {b[1]}, a layer above it: {why}")
    return errors


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--root", default=os.path.join(os.path.dirname(__file__), ".."))
    ap.add_argument("--objs", help="the build's output folder (e.g. build/gcc-release)")
    args = ap.parse_args()
    errors = check(os.path.abspath(args.root), args.objs)
    for e in errors:
        print("layers:", e)
    if not errors:
        print("layers: every dependency goes down" + ("" if args.objs else " (includes only)"))
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
