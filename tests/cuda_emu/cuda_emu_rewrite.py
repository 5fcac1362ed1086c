#!/usr/bin/env python3
"""tests/cuda_emu/cuda_emu_rewrite.py — the emulated GPU's preprocessing step (tests only).

Copies the CUDA sources of one folder (kernels/cuda) into a build folder, rewriting the two things
a host C++ compiler cannot take and a macro cannot express:

  name<<<grid, block[, shmem[, stream]]>>>(args);    (one line or several)
    -> ::strata_emu::launch(name, "name", dim3(grid), dim3(block), shmem, stream, args);
  __shared__ [__align__(n)] T name[A][B];
    -> a reference `name` of type T(&)[A][B] into the running block's shared arena
  extern __shared__ [__align__(n)] T name[];
    -> a pointer `name` to the launch's dynamic shared memory

Everything else is left as it is, and every rewrite keeps the line count, so diagnostics and
ThreadSanitizer reports name the original file and line (each output starts with a #line).
.cu files are written as <name>.cu.cpp so the host compiler treats them as C++.

--mutate FILE:N:FUNC removes the N-th (1-based) call `FUNC();` in FILE: the mutation test of the
ThreadSanitizer build (a removed __syncwarp must be detected).
"""
import argparse
import os
import re
import sys


class RewriteError(Exception):
    pass


def skip_ws_back(text, i):
    while i >= 0 and text[i].isspace():
        i -= 1
    return i


def launch_callee_start(text, pos):
    """Index where the callee expression of the launch whose '<<<' is at pos begins."""
    i = skip_ws_back(text, pos - 1)
    while True:
        if i >= 0 and text[i] == '>':  # template arguments: walk back to the matching '<'
            depth = 0
            while i >= 0:
                if text[i] == '>':
                    depth += 1
                elif text[i] == '<':
                    depth -= 1
                    if depth == 0:
                        break
                i -= 1
            if i < 0:
                raise RewriteError('unbalanced template arguments before <<<')
            i = skip_ws_back(text, i - 1)
        end = i
        while i >= 0 and (text[i].isalnum() or text[i] == '_'):
            i -= 1
        if i == end:
            raise RewriteError('no kernel name before <<<')
        j = skip_ws_back(text, i)
        if j >= 1 and text[j - 1:j + 1] == '::':
            i = skip_ws_back(text, j - 2)
            continue
        return i + 1


def split_top_level(s):
    parts, depth, cur = [], 0, []
    for ch in s:
        if ch in '([{':
            depth += 1
        elif ch in ')]}':
            depth -= 1
        if ch == ',' and depth == 0:
            parts.append(''.join(cur))
            cur = []
        else:
            cur.append(ch)
    parts.append(''.join(cur))
    return [p.strip() for p in parts]


def matching_paren(text, open_pos):
    depth = 0
    for k in range(open_pos, len(text)):
        if text[k] == '(':
            depth += 1
        elif text[k] == ')':
            depth -= 1
            if depth == 0:
                return k
    raise RewriteError('unbalanced parentheses in a launch')


def rewrite_launches(text):
    out = []
    last = 0
    while True:
        pos = text.find('<<<', last)
        if pos < 0:
            break
        start = launch_callee_start(text, pos)
        if start < last:
            raise RewriteError('overlapping launches')
        close = text.find('>>>', pos)
        if close < 0:
            raise RewriteError('<<< without >>>')
        cfg = split_top_level(strip_comments(text[pos + 3:close]))
        if not 2 <= len(cfg) <= 4:
            raise RewriteError('a launch needs 2 to 4 configuration values, got %d' % len(cfg))
        while len(cfg) < 4:
            cfg.append('0' if len(cfg) == 2 else 'nullptr')
        k = close + 3
        while k < len(text) and text[k].isspace():
            k += 1
        if k >= len(text) or text[k] != '(':
            raise RewriteError('a launch without its argument list')
        rparen = matching_paren(text, k)
        callee = strip_comments(text[start:pos]).strip()
        args = strip_comments(text[k + 1:rparen]).strip()
        span = text[start:rparen + 1]
        call = '::strata_emu::launch(%s, "%s", dim3(%s), dim3(%s), static_cast<size_t>(%s), %s%s)' % (
            callee, ' '.join(callee.split()), cfg[0], cfg[1], cfg[2], cfg[3],
            (', ' + ' '.join(args.split())) if args else '')
        call = ' '.join(call.split('\n'))
        out.append(text[last:start])
        out.append(call + '\n' * span.count('\n'))
        last = rparen + 1
    out.append(text[last:])
    return ''.join(out)


SHARED_RE = re.compile(
    r'(?P<extern>\bextern\s+)?\b__shared__\s+(?:__align__\s*\(\s*(?P<align>\d+)\s*\)\s+)?'
    r'(?P<type>[A-Za-z_][\w:<>,\s\*]*?)\s+(?P<name>[A-Za-z_]\w*)\s*(?P<dims>(?:\[[^\]]*\]\s*)*);')


def rewrite_shared(text):
    def repl(m):
        whole = m.group(0)
        newlines = '\n' * whole.count('\n')
        t = ' '.join(m.group('type').split())
        name = m.group('name')
        dims = ''.join(m.group('dims').split())
        align = m.group('align') or '0'
        if m.group('extern'):
            if dims != '[]':
                raise RewriteError('extern __shared__ %s must be an unsized array' % name)
            return 'STRATA_EMU_EXTERN_SHARED(%s, %s);%s' % (name, t, newlines)
        if not dims:
            dims = ''
        return ('static const ::strata_emu::SharedSite strata_emu_site_%s{}; '
                'auto& %s = ::strata_emu::block_shared<%s%s, %s>(strata_emu_site_%s);%s') % (
                    name, name, t, dims, align, name, newlines)

    out = SHARED_RE.sub(repl, text)
    if re.search(r'\b__shared__\b', strip_comments(out)):
        raise RewriteError('a __shared__ declaration the rewrite does not understand')
    return out


def strip_comments(text):
    text = re.sub(r'/\*.*?\*/', lambda m: '\n' * m.group(0).count('\n'), text, flags=re.S)
    return re.sub(r'//[^\n]*', '', text)


def mutate(text, nth, func):
    count = 0
    pattern = re.compile(r'\b' + re.escape(func) + r'\(\s*\)\s*;')
    code = strip_comments(text)
    # Find the nth call outside comments; comment stripping keeps offsets only for // comments,
    # so search line by line on the comment-free text and map back by line number.
    lines, code_lines = text.split('\n'), code.split('\n')
    if len(lines) != len(code_lines):
        raise RewriteError('comment stripping changed the line count')
    for idx, line in enumerate(code_lines):
        for m in pattern.finditer(line):
            count += 1
            if count == nth:
                orig = lines[idx]
                k = orig.find(m.group(0))
                lines[idx] = orig[:k] + '/* mutation: %s removed */' % m.group(0) + orig[k + len(m.group(0)):]
                return '\n'.join(lines)
    raise RewriteError('no call number %d of %s()' % (nth, func))


def process(src_path, text, mutations):
    base = os.path.basename(src_path)
    for (mfile, nth, func) in mutations:
        if mfile == base:
            text = mutate(text, nth, func)
    code = rewrite_shared(text)
    code = rewrite_launches(code)
    return '#line 1 "%s"\n%s' % (os.path.abspath(src_path), code)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--src', required=True, help='folder of the CUDA sources (kernels/cuda)')
    ap.add_argument('--out', required=True, help='output folder (its kernels/cuda mirrors --src)')
    ap.add_argument('--mutate', action='append', default=[], help='FILE:N:FUNC, e.g. mmv_kernel.cuh:2:__syncwarp')
    ap.add_argument('--stamp', help='file to touch when done')
    a = ap.parse_args()
    mutations = []
    for m in a.mutate:
        f, n, func = m.split(':')
        mutations.append((f, int(n), func))
    os.makedirs(a.out, exist_ok=True)
    for name in sorted(os.listdir(a.src)):
        path = os.path.join(a.src, name)
        if not os.path.isfile(path) or not name.endswith(('.cu', '.cuh', '.h')):
            continue
        with open(path, encoding='utf-8') as f:
            text = f.read()
        try:
            out_text = process(path, text, mutations)
        except RewriteError as e:
            sys.exit('%s: %s' % (path, e))
        out_name = name + '.cpp' if name.endswith('.cu') else name
        out_path = os.path.join(a.out, out_name)
        old = None
        if os.path.exists(out_path):
            with open(out_path, encoding='utf-8') as f:
                old = f.read()
        if old != out_text:  # unchanged outputs keep their time stamps (no needless rebuilds)
            with open(out_path, 'w', encoding='utf-8') as f:
                f.write(out_text)
    if a.stamp:
        with open(a.stamp, 'w') as f:
            f.write('ok\n')


if __name__ == '__main__':
    main()
