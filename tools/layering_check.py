#!/usr/bin/env python3
"""tools/layering_check.py — the engine's dependencies point one way (CTest: engine_layering).

Reads the folder targets from engine/CMakeLists.txt (its strata_engine_folder(...) calls: name,
folder, SOURCES / EXCLUDE, DEPS), assigns every engine source and header to its target, and checks
every #include "engine/..." and "kernels/..." against the targets each may use (its DEPS,
transitively). Also: no folder cycle in engine/ (from the includes themselves), kernels/ includes no
engine/ header, engine/ includes no Qt header, and every engine file belongs to a target. The CUDA
backend module (engine/backend/cuda) may use the seam's base and kernels/cuda only; serve/ sits on
top and may use everything.

Usage: tools/layering_check.py [SOURCE_DIR]. Prints each violation; exit 1 when there is one.
       tools/layering_check.py --self-test [SOURCE_DIR]: on a scratch copy of engine/, an include
       that points up (plan -> exec) must be reported, as a check that the checker is live.
"""
import os
import re
import sys

import shutil
import subprocess
import tempfile

SELF_TEST = len(sys.argv) > 1 and sys.argv[1] == "--self-test"
ARGS = sys.argv[2:] if SELF_TEST else sys.argv[1:]
ROOT = os.path.abspath(ARGS[0] if ARGS else os.path.join(os.path.dirname(__file__), ".."))
INCLUDE = re.compile(r'^\s*#\s*include\s*[<"]([^">]+)[">]', re.M)


def read(path):
    with open(path, encoding="utf-8", errors="replace") as f:
        return f.read()


def folder_targets():
    """{target: {"dir", "sources" (set or None: the folder's *.cpp), "exclude", "deps"}} from CMake."""
    text = re.sub(r"#[^\n]*", "", read(os.path.join(ROOT, "engine", "CMakeLists.txt")))
    targets = {}
    for m in re.finditer(r"strata_engine_folder\(([^)]*)\)", text):
        words = m.group(1).split()
        name, folder, rest = "strata_" + words[0], words[1], words[2:]
        section, fields = None, {"SOURCES": [], "EXCLUDE": [], "DEPS": []}
        for w in rest:
            if w in fields:
                section = w
            elif section:
                fields[section].append(w)
        sources = {os.path.relpath(s.replace("${CMAKE_CURRENT_SOURCE_DIR}", os.path.join(ROOT, "engine")), ROOT)
                   for s in fields["SOURCES"]} or None
        exclude = {"engine/%s/%s" % (folder, x) for x in fields["EXCLUDE"]}
        deps = [d for d in fields["DEPS"] if d.startswith("strata_")]
        if name in targets:  # defined in both branches of an if(): a file is out only when out of both
            exclude &= targets[name]["exclude"]
            deps = sorted(set(deps) | set(targets[name]["deps"]))
        targets[name] = {"dir": "engine/" + folder, "sources": sources, "exclude": exclude, "deps": deps}
    return targets


def closure(targets, name, seen=None):
    seen = set() if seen is None else seen
    for d in targets.get(name, {}).get("deps", []):
        if d not in seen:
            seen.add(d)
            closure(targets, d, seen)
    return seen


def main():
    targets = folder_targets()
    problems = []
    if not targets:
        print("layering_check: no strata_engine_folder(...) in engine/CMakeLists.txt")
        return 1
    # The module and the server: not folder libraries of the core.
    special = {"engine/backend/cuda": ("strata-backend-cuda", ["strata_backend_base"]),
               "engine/serve": ("strata_serve", list(targets))}

    files = []
    for top in ("engine", "kernels"):
        for root, _, names in os.walk(os.path.join(ROOT, top)):
            for n in names:
                if n.endswith((".h", ".cpp", ".cu", ".cuh", ".inc")):
                    files.append(os.path.relpath(os.path.join(root, n), ROOT))

    def target_of(path):
        folder = os.path.dirname(path)
        if folder in special:
            return special[folder][0]
        stem = os.path.splitext(path)[0]
        for name, t in targets.items():  # an explicit source list claims its own files and headers
            if t["sources"] and any(os.path.splitext(s)[0] == stem for s in t["sources"]):
                return name
        for name, t in targets.items():
            if t["dir"] == folder and not t["sources"] and path not in t["exclude"]:
                return name
        return None

    def allowed(name):
        if name in dict(special.values()):
            deps = dict(special.values())[name]
            out = set(deps)
            for d in deps:
                out |= closure(targets, d)
            return out
        return closure(targets, name)

    folder_edges = {}
    for path in files:
        text = read(os.path.join(ROOT, path))
        includes = INCLUDE.findall(text)
        if path.startswith("kernels/"):
            for inc in includes:
                if inc.startswith("engine/"):
                    problems.append("%s includes %s: kernels/ knows buffers and shapes, not the engine" % (path, inc))
            continue
        for inc in includes:
            if re.match(r"Q[A-Z]\w*$|Qt\w+/", inc):
                problems.append("%s includes Qt (%s): the engine core is Qt-free" % (path, inc))
        me = target_of(path)
        if me is None:
            problems.append("%s belongs to no target of engine/CMakeLists.txt" % path)
            continue
        ok = allowed(me) | {me}
        for inc in includes:
            if inc.startswith("kernels/cuda/"):
                if me != "strata-backend-cuda":
                    problems.append("%s includes %s: only the CUDA module uses kernels/cuda" % (path, inc))
                continue
            if not inc.startswith("engine/"):
                continue
            if not os.path.exists(os.path.join(ROOT, inc)):
                problems.append("%s includes %s, which does not exist" % (path, inc))
                continue
            other = target_of(inc)
            a, b = os.path.dirname(path), os.path.dirname(inc)
            if a != b:
                folder_edges.setdefault(a, set()).add(b)
            if other is None or other == me:
                continue
            if other not in ok:
                problems.append("%s (%s) includes %s (%s), which %s does not link" % (path, me, inc, other, me))

    # No folder cycle: a depth-first search over the folders' include edges.
    state = {}

    def visit(node, stack):
        state[node] = 1
        for nxt in sorted(folder_edges.get(node, ())):
            if state.get(nxt) == 1:
                cycle = stack[stack.index(nxt):] + [nxt] if nxt in stack else [node, nxt]
                problems.append("folder cycle: " + " -> ".join(cycle))
            elif nxt not in state:
                visit(nxt, stack + [nxt])
        state[node] = 2

    for node in sorted(folder_edges):
        if node not in state:
            visit(node, [node])

    for p in problems:
        print("layering_check: " + p)
    print("layering_check: %d files, %d folder targets, %d problem(s)" % (len(files), len(targets), len(problems)))
    return 1 if problems else 0


def self_test():
    with tempfile.TemporaryDirectory() as scratch:
        for top in ("engine", "kernels"):
            shutil.copytree(os.path.join(ROOT, top), os.path.join(scratch, top))
        clean = subprocess.run([sys.executable, __file__, scratch], capture_output=True, text=True)
        if clean.returncode != 0:
            print("self-test: the unchanged copy fails:\n" + clean.stdout)
            return 1
        victim = os.path.join(scratch, "engine", "plan", "cost_model.h")
        with open(victim, "a", encoding="utf-8") as f:
            f.write('\n#include "engine/exec/session.h"\n')
        bad = subprocess.run([sys.executable, __file__, scratch], capture_output=True, text=True)
        caught = bad.returncode == 1 and "which strata_plan does not link" in bad.stdout and "folder cycle" in bad.stdout
        print(bad.stdout)
        print("self-test: plan -> exec " + ("caught" if caught else "NOT caught"))
        return 0 if caught else 1


if __name__ == "__main__":
    sys.exit(self_test() if SELF_TEST else main())
