#!/usr/bin/env python3
"""Checks that every source folder includes only the folders it may depend on.

The rules come from the build: each folder's CMakeLists.txt declares what it
may include (gmt_module / gmt_layer in cmake/gmt_module.cmake), and CMake
writes them to <build>/layering.txt, one line per folder:

    lib/report: lib/core lib/stacks lib/registry

A quoted include ("lib/engine/engine.h") is resolved against the repository
root (and include/ for the public header, "gmt/gmt.h"); the folder that owns
the included file is the longest declared folder that is a prefix of its path.
An include is allowed when it stays in the including file's own folder or names
a folder on that folder's line. Includes of files outside every declared folder
(third-party headers, generated files) are not judged.

With --doc, the table of docs/architecture.md must list every folder with
the same folders it may include (a row "| `lib/report/` | job | `lib/core`
`lib/stacks` |"; "nothing" for none), so the picture in words stays true.

Exit status 0 when every include is allowed, 1 otherwise (each violation
printed as file:line: what and which folders are allowed), 2 on bad input.
"""
import argparse
import os
import re
import sys

INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"')
SOURCE_SUFFIXES = ('.h', '.cc', '.inc', '.cu', '.c', '.cpp')


def read_rules(path):
    rules = {}
    with open(path, encoding='utf-8') as f:
        for number, line in enumerate(f, 1):
            line = line.strip()
            if not line or line.startswith('#'):
                continue
            folder, sep, deps = line.partition(':')
            if not sep:
                raise ValueError(f'{path}:{number}: expected "folder: deps"')
            rules[folder.strip()] = set(deps.split())
    return rules


def owner(path, folders):
    best = None
    for folder in folders:
        if path == folder or path.startswith(folder + '/'):
            if best is None or len(folder) > len(best):
                best = folder
    return best


def resolve(root, including_file, target):
    # Repository-root relative first (the project's convention), then the
    # public include folder, then relative to the including file.
    for candidate in (target, os.path.join('include', target),
                      os.path.normpath(os.path.join(os.path.dirname(including_file), target))):
        if os.path.isfile(os.path.join(root, candidate)):
            return candidate
    return None


def check_file(root, rel, text, rules, folders):
    problems = []
    mine = owner(rel, folders)
    if mine is None:
        return problems
    allowed = rules[mine]
    for number, line in enumerate(text.splitlines(), 1):
        m = INCLUDE.match(line)
        if not m:
            continue
        target = resolve(root, rel, m.group(1))
        if target is None:
            continue
        theirs = owner(target, folders)
        if theirs is None or theirs == mine or theirs in allowed:
            continue
        problems.append(
            f'{rel}:{number}: {mine} may not include "{m.group(1)}" ({theirs}); '
            f'{mine} may include: {" ".join(sorted(allowed)) or "nothing outside itself"}')
    return problems


DOC_ROW = re.compile(r'^\|\s*`([^`]+?)/?`\s*\|[^|]*\|([^|]*)\|')


def check_doc(path, rules):
    problems = []
    listed = {}
    with open(path, encoding='utf-8') as f:
        for line in f:
            m = DOC_ROW.match(line)
            if m:
                listed[m.group(1).rstrip('/')] = set(
                    d.rstrip('/') for d in re.findall(r'`([^`]+)`', m.group(2)))
    for folder, allowed in sorted(rules.items()):
        if folder not in listed:
            problems.append(f'{path}: no row for {folder}')
        elif listed[folder] != allowed:
            problems.append(
                f'{path}: {folder} may include {" ".join(sorted(listed[folder])) or "nothing"} '
                f'there, but the build says {" ".join(sorted(allowed)) or "nothing"}')
    for folder in sorted(set(listed) - set(rules)):
        problems.append(f'{path}: {folder} has a row but no rule in the build')
    return problems


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--rules', required=True, help='layering.txt from the build')
    parser.add_argument('--root', default=os.path.join(os.path.dirname(__file__), '..'))
    parser.add_argument('--extra', action='append', default=[], metavar='PATH=INCLUDE',
                        help='check a made-up file PATH holding #include "INCLUDE" too '
                             '(the test that shows a violation is caught)')
    parser.add_argument('--doc', help='docs/architecture.md, checked against the rules')
    parser.add_argument('--quiet', action='store_true', help='print nothing when all is well')
    args = parser.parse_args()
    root = os.path.abspath(args.root)
    try:
        rules = read_rules(args.rules)
    except (OSError, ValueError) as e:
        print(f'check_layering: {e}', file=sys.stderr)
        return 2
    folders = sorted(rules)
    problems = []
    checked = 0
    for folder in folders:
        base = os.path.join(root, folder)
        for dirpath, _, names in os.walk(base):
            for name in sorted(names):
                if not name.endswith(SOURCE_SUFFIXES):
                    continue
                path = os.path.join(dirpath, name)
                rel = os.path.relpath(path, root)
                if owner(rel, folders) != folder:
                    continue  # a sub-folder with rules of its own
                with open(path, encoding='utf-8', errors='replace') as f:
                    problems += check_file(root, rel, f.read(), rules, folders)
                checked += 1
    for extra in args.extra:
        rel, sep, target = extra.partition('=')
        if not sep:
            print(f'check_layering: --extra wants PATH=INCLUDE, got {extra!r}', file=sys.stderr)
            return 2
        problems += check_file(root, rel, f'#include "{target}"\n', rules, folders)
        checked += 1
    if args.doc:
        try:
            problems += check_doc(args.doc, rules)
        except OSError as e:
            print(f'check_layering: {e}', file=sys.stderr)
            return 2
    for p in problems:
        print(p)
    if args.quiet and not problems:
        return 0
    print(f'check_layering: {checked} files in {len(folders)} folders, '
          f'{len(problems)} forbidden includes')
    return 1 if problems else 0


if __name__ == '__main__':
    sys.exit(main())
