#!/usr/bin/env python3
"""Checks that every repository path the Markdown documentation names exists.

Files moved on, and a page that points at a path that is no longer there
misleads the reader. This check reads every *.md file of the repository (build
trees, hidden folders and caches left out) and looks at:

* code spans (`lib/report/report_json.cc`) and the words of fenced code blocks
  that start with a top-level folder of the repository (tools/test.sh, a stack
  frame's examples/leak_runtime.cu:21) or name a top-level *.md file
  (DESIGN.md). A ":line" tail is dropped; "*", "?" and "<placeholder>" parts
  are globs that must match something; a trailing "/" must be a folder.
  Paths under an install prefix are written with the prefix
  (/opt/gpumemtrace/lib/...) or a placeholder (<prefix>/lib/...), so they are
  not taken for the repository's lib/;
* the targets of relative Markdown links ([text](docs/ci.md#anchor)),
  resolved from the linking file's folder, and their anchors, which must be
  the GitHub anchor of a heading of the target page;
* the "Layout" section of the top-level README.md: its fenced block must name
  every top-level folder and every folder of lib/ and interpose/, and nothing
  that is not there (a line's first word names the folder; indented lines
  continue the line above);
* the option table of the top-level README.md (the section whose heading
  starts with "Options"): one row per GMT_OPTIONS key, exactly the keys that
  lib/core/options.inc declares.

Exit status 0 when every path exists, 1 otherwise (each problem printed as
file:line: what), 2 on bad input.
"""
import argparse
import glob
import os
import re
import sys

SKIP_DIRS = {'.git', '.device', '.whl', '.gl', '__pycache__', 'node_modules'}
CODE_SPAN = re.compile(r'(`+)(.+?)\1', re.DOTALL)
FENCE = re.compile(r'^\s*(```|~~~)')
LINK = re.compile(r'\[[^\]]*\]\(([^)\s]+)(?:\s+"[^"]*")?\)')
TOP_LEVEL_DOC = re.compile(r'^[A-Z][A-Z_]*\.md$')
PLACEHOLDER = re.compile(r'<[^<>/]+>')
HEADING = re.compile(r'^#{1,6}\s+(.*?)\s*#*\s*$')
# Characters that surround a path in prose or code but are not part of it.
STRIP = '()[]{}\'",;`.!'


def skipped_dir(name):
    return name in SKIP_DIRS or name.startswith('build') or (
        name.startswith('.') and name != '.ci')


def top_level_folders(root):
    return sorted(name for name in os.listdir(root)
                  if os.path.isdir(os.path.join(root, name)) and not skipped_dir(name))


def markdown_files(root):
    found = []
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if not skipped_dir(d))
        for name in sorted(filenames):
            if name.endswith('.md'):
                found.append(os.path.relpath(os.path.join(dirpath, name), root))
    return found


def candidate(word, folders):
    """The repository path a word names, or None when it names none."""
    for part in word.split('='):  # GMT_LIBRARY=lib/..., --doc=docs/...
        part = part.strip(STRIP)
        if not part or '://' in part or part.startswith(('/', '~', '$', '-')):
            continue
        part = part.split(':', 1)[0].split('#', 1)[0]
        if not part:
            continue
        first = part.split('/', 1)[0]
        if first in folders or ('/' not in part and TOP_LEVEL_DOC.match(part)):
            return part
    return None


def exists(root, path):
    pattern = PLACEHOLDER.sub('*', path)
    want_dir = pattern.endswith('/')
    pattern = pattern.rstrip('/')
    if any(c in pattern for c in '*?['):
        matches = glob.glob(os.path.join(root, pattern))
        if want_dir:
            matches = [m for m in matches if os.path.isdir(m)]
        return bool(matches)
    full = os.path.join(root, pattern)
    return os.path.isdir(full) if want_dir else os.path.exists(full)


def line_of(text, offset):
    return text.count('\n', 0, offset) + 1


def split_fences(text):
    """(prose with fenced blocks blanked out, [(first line, block text)])."""
    prose = []
    blocks = []
    block = None
    for number, line in enumerate(text.splitlines(keepends=True), 1):
        if FENCE.match(line):
            if block is None:
                block = (number + 1, [])
            else:
                blocks.append((block[0], ''.join(block[1])))
                block = None
            prose.append('\n')
        elif block is not None:
            block[1].append(line)
            prose.append('\n')
        else:
            prose.append(line)
    if block is not None:
        blocks.append((block[0], ''.join(block[1])))
    return ''.join(prose), blocks


def anchors(text):
    """The GitHub anchors of a page's headings (fenced blocks left out)."""
    prose, _ = split_fences(text)
    seen = {}
    found = set()
    for line in prose.splitlines():
        m = HEADING.match(line)
        if not m:
            continue
        slug = re.sub(r'[^\w\- ]', '', m.group(1).strip().lower()).replace(' ', '-')
        n = seen.get(slug, 0)
        seen[slug] = n + 1
        found.add(slug if n == 0 else f'{slug}-{n}')
    return found


def check_text(root, rel, text, folders, pages):
    problems = []
    prose, blocks = split_fences(text)

    def report(number, path, how):
        if not exists(root, path):
            problems.append(f'{rel}:{number}: {how} {path} does not exist')

    for m in CODE_SPAN.finditer(prose):
        for word in m.group(2).split():
            path = candidate(word, folders)
            if path:
                report(line_of(prose, m.start()), path, 'path')
    for first, block in blocks:
        for offset, line in enumerate(block.splitlines()):
            for word in line.split():
                path = candidate(word, folders)
                if path:
                    report(first + offset, path, 'path')
    here = os.path.dirname(rel)
    for m in LINK.finditer(prose):
        target, _, anchor = m.group(1).partition('#')
        if re.match(r'^[a-z][a-z0-9+.-]*:', target):
            continue  # a URL
        path = os.path.normpath(os.path.join(here, target)) if target else rel
        number = line_of(prose, m.start())
        if path not in pages and not os.path.exists(os.path.join(root, path)):
            problems.append(f'{rel}:{number}: link {m.group(1)} does not exist')
        elif anchor and path.endswith('.md'):
            page = pages.get(path)
            if page is None:
                with open(os.path.join(root, path), encoding='utf-8') as f:
                    page = f.read()
            if anchor not in anchors(page):
                problems.append(f'{rel}:{number}: link {m.group(1)}: {path} has no '
                                f'heading with the anchor #{anchor}')
    return problems


def check_layout(root, rel, text, folders):
    """The README's Layout block lists the folders as they are."""
    m = re.search(r'^##+\s*Layout\s*$(.*?)^(```|~~~)\s*$(.*?)^(```|~~~)', text,
                  re.MULTILINE | re.DOTALL)
    if not m:
        return [f'{rel}: no "Layout" section with a fenced block']
    number = line_of(text, m.start(3))
    listed = set()
    for line in m.group(3).splitlines():
        words = line.split()
        if words and not line[0].isspace():  # indented: a continuation
            # include/gmt/ lists include/ too
            parts = words[0].rstrip('/').split('/')
            listed |= {'/'.join(parts[:n]) for n in range(1, len(parts) + 1)}
    wanted = set(folders)
    for parent in ('lib', 'interpose'):
        base = os.path.join(root, parent)
        if os.path.isdir(base):
            wanted |= {f'{parent}/{d}' for d in os.listdir(base)
                       if os.path.isdir(os.path.join(base, d)) and not skipped_dir(d)}
    problems = [f'{rel}:{number}: Layout does not list {d}/' for d in sorted(wanted - listed)]
    problems += [f'{rel}:{number}: Layout lists {d}/, which is not a folder'
                 for d in sorted(listed) if not os.path.isdir(os.path.join(root, d))]
    return problems


def check_options(root, rel, text):
    """The README's option table lists exactly the keys options.inc declares."""
    source = os.path.join(root, 'lib', 'core', 'options.inc')
    if not os.path.exists(source):
        return []
    with open(source, encoding='utf-8') as f:
        declared = set(re.findall(r'^GMT_OPTION\(\s*[\w:]+\s*,\s*(\w+)\s*,', f.read(),
                                  re.MULTILINE))
    m = re.search(r'^##+\s*Options\b.*?$(.*?)(?=^##?\s)', text + '\n## end\n',
                  re.MULTILINE | re.DOTALL)
    if not m:
        return [f'{rel}: no "Options" section']
    number = line_of(text, m.start())
    listed = set(re.findall(r'^\|\s*`(\w+)`\s*\|', m.group(1), re.MULTILINE))
    problems = [f'{rel}:{number}: the option table lacks {k} (lib/core/options.inc)'
                for k in sorted(declared - listed)]
    problems += [f'{rel}:{number}: the option table lists {k}, which '
                 f'lib/core/options.inc does not declare' for k in sorted(listed - declared)]
    return problems


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--root', default=os.path.join(os.path.dirname(__file__), '..'))
    parser.add_argument('--extra', action='append', default=[], metavar='NAME=TEXT',
                        help='check a made-up page NAME holding TEXT too '
                             '(the test that shows a missing path is caught)')
    parser.add_argument('--quiet', action='store_true', help='print nothing when all is well')
    args = parser.parse_args()
    root = os.path.abspath(args.root)
    if not os.path.isdir(root):
        print(f'check_doc_paths: no folder {root}', file=sys.stderr)
        return 2
    folders = top_level_folders(root)
    pages = []
    for rel in markdown_files(root):
        with open(os.path.join(root, rel), encoding='utf-8') as f:
            pages.append((rel, f.read()))
    for extra in args.extra:
        name, sep, text = extra.partition('=')
        if not sep:
            print(f'check_doc_paths: --extra {extra}: expected NAME=TEXT', file=sys.stderr)
            return 2
        pages.append((name, text))
    problems = []
    by_path = dict(pages)
    for rel, text in pages:
        problems += check_text(root, rel, text, folders, by_path)
        if rel == 'README.md':
            problems += check_layout(root, rel, text, folders)
            problems += check_options(root, rel, text)
    for p in problems:
        print(p)
    if problems:
        print(f'check_doc_paths: {len(problems)} problem(s) in {len(pages)} pages')
        return 1
    if not args.quiet:
        print(f'check_doc_paths: every path named in {len(pages)} pages exists')
    return 0


if __name__ == '__main__':
    sys.exit(main())
