#!/usr/bin/env python3
"""Code-shape checks: functions longer than a limit, and import cycles among a crate's
modules (from its `use crate::` and `crate::` paths).

usage: python3 scripts/shape.py [--max-lines N] FILE_OR_DIR...
       python3 scripts/shape.py --cycles CRATE_SRC_DIR
Exits 1 if a function is too long or a cycle exists."""
import os
import re
import sys


def rust_files(paths):
    for p in paths:
        if os.path.isdir(p):
            for root, _, files in os.walk(p):
                for f in sorted(files):
                    if f.endswith(".rs"):
                        yield os.path.join(root, f)
        else:
            yield p


def strip(line):
    """The line without string literals and `//` comments (good enough for braces)."""
    line = re.sub(r'"(\\.|[^"\\])*"', '""', line)
    line = re.sub(r"'(\\.|[^'\\])'", "''", line)
    return line.split("//")[0]


def long_functions(path, limit):
    lines = open(path, encoding="utf-8").read().split("\n")
    out = []
    i = 0
    fn_re = re.compile(r"^\s*(pub(\([^)]*\))?\s+)?(const\s+)?(unsafe\s+)?(extern\s+\"C\"\s+)?fn\s+(\w+)")
    while i < len(lines):
        m = fn_re.match(lines[i])
        if not m:
            i += 1
            continue
        name, start, depth, opened, j = m.group(6), i, 0, False, i
        while j < len(lines):
            s = strip(lines[j])
            if not opened and ";" in s and "{" not in s:
                break  # a declaration without a body
            depth += s.count("{") - s.count("}")
            opened = opened or "{" in s
            if opened and depth <= 0:
                break
            j += 1
        n = j - start + 1
        if opened and n > limit:
            out.append((path, start + 1, name, n))
        i += 1
    return out


def cycles(src):
    mods = {}
    for path in rust_files([src]):
        rel = os.path.relpath(path, src)
        top = rel.split(os.sep)[0].removesuffix(".rs")
        if top in ("lib", "main"):
            continue
        text = open(path, encoding="utf-8").read()
        text = re.sub(r"#\[cfg\(test\)\]\s*mod tests\s*\{.*", "", text, flags=re.S)
        # Code only: doc links (`[crate::x]`) and comments name modules without using them.
        text = "\n".join(strip(l) for l in text.split("\n"))
        deps = set(re.findall(r"crate::(\w+)", text)) - {top}
        mods.setdefault(top, set()).update(deps)
    found, state = [], {}

    def visit(m, stack):
        state[m] = 1
        for d in sorted(mods.get(m, ())):
            if d not in mods:
                continue
            if state.get(d) == 1:
                found.append(stack[stack.index(d):] + [d] if d in stack else [m, d])
            elif d not in state:
                visit(d, stack + [d])
        state[m] = 2

    for m in sorted(mods):
        if m not in state:
            visit(m, [m])
    return mods, found


def main(argv):
    if argv[:1] == ["--cycles"]:
        mods, found = cycles(argv[1])
        for m in sorted(mods):
            print(f"{m}: {', '.join(sorted(d for d in mods[m] if d in mods)) or '-'}")
        for c in found:
            print("cycle: " + " -> ".join(c))
        print(f"{len(mods)} modules, {len(found)} import cycles")
        return 1 if found else 0
    limit = 150
    if argv[:1] == ["--max-lines"]:
        limit, argv = int(argv[1]), argv[2:]
    bad = [f for p in rust_files(argv) for f in long_functions(p, limit)]
    for path, line, name, n in bad:
        print(f"{path}:{line}: fn {name} is {n} lines (limit {limit})")
    print(f"{len(bad)} functions over {limit} lines")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
