#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""check-layers.py: checks that the layers of docs/architecture.md hold, on the
sources and on the built objects.

On the built static libraries (nm): every symbol a library uses from another of
the project's libraries must come from a library earlier in the stage order
below. That rules out circles between folders and calls against the order,
including calls through function declarations in public headers, which the
meson include directories alone cannot see.

On the sources: no file under core/ includes a header that lives in compiler/;
no file in core/, compiler/, tools/, gst/ or pipelines/ includes a header from
tests/ or reaches another folder with a relative "../" include; no two headers
share an include guard.

Usage: check-layers.py SOURCE_ROOT NAME=LIB.a [NAME=LIB.a ...]
  (libraries given in stage order, lowest first). Needs binutils' nm; runs
  with any python3.
"""
import os
import re
import subprocess
import sys


def nm_symbols(path):
    """Defined and undefined global symbols of a static library."""
    out = subprocess.run(['nm', '-g', '--defined-only', path], capture_output=True, text=True,
                         check=True).stdout
    defined = set()
    for line in out.splitlines():
        parts = line.split()
        if len(parts) == 3 and parts[1] in 'TDBRWVGSC' and parts[1] != 'U':
            defined.add(parts[2])
    out = subprocess.run(['nm', '-g', '--undefined-only', path], capture_output=True, text=True,
                         check=True).stdout
    undefined = set()
    for line in out.splitlines():
        parts = line.split()
        if len(parts) == 2 and parts[0] == 'U':
            undefined.add(parts[1])
    return defined, undefined


def check_objects(libs):
    problems = []
    order = [name for name, _ in libs]
    syms = {name: nm_symbols(path) for name, path in libs}
    owner = {}
    for name in order:
        for s in syms[name][0]:
            owner.setdefault(s, name)
    edges = {}
    for name in order:
        for s in syms[name][1]:
            dep = owner.get(s)
            if dep and dep != name:
                edges.setdefault((name, dep), []).append(s)
    for (a, b), used in sorted(edges.items()):
        if order.index(b) > order.index(a):
            problems.append('%s uses %s, which comes after it in the stage order: %s' %
                            (a, b, ', '.join(sorted(used)[:6])))
    print('folder graph (library -> libraries it uses):')
    for a in order:
        deps = sorted({b for (x, b) in edges if x == a}, key=order.index)
        print('  %-10s -> %s' % (a, ' '.join(deps) if deps else '-'))
    return problems


INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)
GUARD = re.compile(r'^\s*#\s*ifndef\s+(\w+)\s*\n\s*#\s*define\s+\1\b', re.M)


def check_sources(root):
    problems = []
    files = []
    for top in ('core', 'compiler', 'tools', 'gst', 'pipelines', 'tests', 'examples'):
        for d, dirs, names in os.walk(os.path.join(root, top)):
            dirs[:] = [x for x in dirs if not x.startswith('build')]
            files += [os.path.join(d, n) for n in names if n.endswith(('.c', '.h'))]
    by_name = {}
    for f in files:
        by_name.setdefault(os.path.basename(f), []).append(os.path.relpath(f, root))
    guards = {}
    for f in files:
        rel = os.path.relpath(f, root)
        with open(f, encoding='utf-8', errors='replace') as fh:
            text = fh.read()
        library = not rel.startswith(('tests' + os.sep, 'examples' + os.sep))
        for inc in INCLUDE.findall(text):
            base = os.path.basename(inc)
            homes = by_name.get(base, [])
            if library and '../' in inc:
                problems.append('%s: relative include "%s" reaches into another folder' %
                                (rel, inc))
            if library and homes and all(h.startswith('tests' + os.sep) for h in homes):
                problems.append('%s: includes "%s" from tests/' % (rel, inc))
            if rel.startswith('core' + os.sep) and homes and all(
                    h.startswith('compiler' + os.sep) for h in homes):
                problems.append('%s: core includes the compiler header "%s"' % (rel, inc))
        if f.endswith('.h'):
            m = GUARD.search(text)
            if m:
                guards.setdefault(m.group(1), []).append(rel)
    for g, where in sorted(guards.items()):
        if len(where) > 1:
            problems.append('include guard %s is shared by %s' % (g, ', '.join(where)))
    return problems


def main():
    if len(sys.argv) < 3:
        print(__doc__)
        return 2
    root = sys.argv[1]
    libs = [tuple(a.split('=', 1)) for a in sys.argv[2:]]
    problems = check_sources(root) + check_objects(libs)
    for p in problems:
        print('layering: ' + p)
    print('%d passed, %d failed' % (1 if not problems else 0, 1 if problems else 0))
    return 1 if problems else 0


if __name__ == '__main__':
    sys.exit(main())
