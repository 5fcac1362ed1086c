#!/usr/bin/env python3
"""tools/cuda_ptxas_report.py — registers and spills of every CUDA kernel, as ptxas reports them.

Compiles each kernels/cuda/*.cu for one architecture (default sm_90, the H100 / H200) with
`nvcc -Xptxas -v` (no GPU needed: ptxas runs on the host), and writes one row per kernel: registers,
spill stores and loads, stack frame, shared memory, and the blocks per SM that register use
allows at the kernel's launch bound (65,536 registers per SM, allocated per warp in units of 256).
Emulation cannot show any of this (docs/backends.md); CTest `cuda_ptxas_report` runs it in the
CUDA build and keeps the table in the build folder.

  tools/cuda_ptxas_report.py [--nvcc NVCC] [--arch sm_90] [--out FILE.md] [--max-spill BYTES] [SRC_ROOT]

Exit status 1 when a kernel spills more than --max-spill bytes (default 0) or nvcc fails.
"""
import argparse
import glob
import os
import re
import shutil
import subprocess
import sys
import tempfile

ENTRY = re.compile(r"Compiling entry function '([^']+)' for '(sm_\w+)'")
USED = re.compile(r"Used (\d+) registers")
SMEM = re.compile(r"(\d+) bytes smem")
PROPS = re.compile(r"Function properties for ([^\s:]+):?")
FRAME = re.compile(r"(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads")
BOUNDS = re.compile(r"__launch_bounds__\(([^)]*)\)\s*(\w+)")
CONSTS = re.compile(r"constexpr\s+int\s+(\w+)\s*=\s*(\d+)\s*;")


def launch_bounds(root):
    """Kernel name -> the thread count of its __launch_bounds__, from every kernels/cuda source and
    header (a bound may be a product of `constexpr int` constants: kMmvWarps * kWarp)."""
    texts = [open(f).read() for f in glob.glob(os.path.join(root, "kernels", "cuda", "*.cu*"))]
    consts = {}
    for t in texts:
        consts.update({k: int(v) for k, v in CONSTS.findall(t)})
    out = {}
    for t in texts:
        for expr, name in BOUNDS.findall(t):
            value = 1
            for factor in expr.split(",")[0].split("*"):
                factor = factor.strip()
                value *= int(factor) if factor.isdigit() else consts.get(factor, 0)
            if value > 0:
                out[name] = value
    return out


def kernel_base_name(demangled):
    """'void ns::detail::mmv_tiled_kernel<Dec, 8>(args)' -> 'mmv_tiled_kernel'."""
    head = demangled.replace("(anonymous namespace)", "anon").split("(")[0].split("<")[0]
    words = head.split("::")[-1].split()
    return words[-1] if words else demangled


def demangle(names):
    filt = shutil.which("c++filt") or shutil.which("cu++filt")
    if not filt or not names:
        return {n: n for n in names}
    out = subprocess.run([filt], input="\n".join(names), capture_output=True, text=True).stdout.splitlines()
    return dict(zip(names, out)) if len(out) == len(names) else {n: n for n in names}


def blocks_per_sm(regs, threads):
    """Blocks of `threads` threads one SM holds by registers alone (sm_80/sm_90: 64K registers,
    at most 255 per thread, allocated per warp in units of 256, at most 32 blocks)."""
    if regs <= 0 or threads <= 0:
        return None
    per_warp = ((regs * 32 + 255) // 256) * 256
    warps = (threads + 31) // 32
    return min(32, 65536 // (per_warp * warps))


def compile_one(nvcc, arch, root, src):
    with tempfile.TemporaryDirectory() as tmp:
        cmd = [nvcc, "-std=c++20", "-O3", "-I", root, f"-arch={arch}", "-Xptxas", "-v", "-c", src,
               "-o", os.path.join(tmp, "k.o")]
        p = subprocess.run(cmd, capture_output=True, text=True)
    return p.returncode, p.stdout + p.stderr, " ".join(cmd)


def parse(text):
    kernels = {}
    current = None
    for line in text.splitlines():
        m = ENTRY.search(line)
        if m:
            current = m.group(1)
            kernels[current] = {"regs": 0, "smem": 0, "frame": 0, "spill_st": 0, "spill_ld": 0}
            continue
        m = PROPS.search(line)
        if m:
            current = m.group(1)
            kernels.setdefault(current, {"regs": 0, "smem": 0, "frame": 0, "spill_st": 0, "spill_ld": 0})
            continue
        if current is None:
            continue
        m = FRAME.search(line)
        if m:
            k = kernels[current]
            k["frame"], k["spill_st"], k["spill_ld"] = (int(x) for x in m.groups())
        m = USED.search(line)
        if m:
            kernels[current]["regs"] = int(m.group(1))
            s = SMEM.search(line)
            if s:
                kernels[current]["smem"] = int(s.group(1))
    return kernels


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("root", nargs="?", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
    ap.add_argument("--nvcc", default=shutil.which("nvcc") or "/usr/local/cuda/bin/nvcc")
    ap.add_argument("--arch", default="sm_90")
    ap.add_argument("--out", default="")
    ap.add_argument("--max-spill", type=int, default=0)
    a = ap.parse_args()
    root = os.path.abspath(a.root)
    rows, failed = [], False
    bounds = launch_bounds(root)
    for src in sorted(glob.glob(os.path.join(root, "kernels", "cuda", "*.cu"))):
        rc, text, cmd = compile_one(a.nvcc, a.arch, root, src)
        if rc != 0:
            print(f"cuda_ptxas_report: {cmd} failed:\n{text}", file=sys.stderr)
            failed = True
            continue
        kernels = parse(text)
        names = demangle([k for k in kernels if k.startswith("_Z")])
        for mangled, k in kernels.items():
            if k["regs"] == 0 and k["frame"] == 0:
                continue  # a device function's properties only
            name = names.get(mangled, mangled)
            threads = bounds.get(kernel_base_name(name), 0)
            occ = blocks_per_sm(k["regs"], threads)
            rows.append((os.path.basename(src), name, k, threads, occ))
            if k["spill_st"] + k["spill_ld"] > a.max_spill:
                failed = True
    lines = [f"# ptxas report, {a.arch} ({a.nvcc})", "",
             "| file | kernel | registers | spill stores / loads (bytes) | stack frame | smem | blocks/SM by registers |",
             "|---|---|---:|---:|---:|---:|---:|"]
    for f, name, k, threads, occ in rows:
        short = name if len(name) <= 110 else name[:107] + "..."
        occ_text = f"{occ} (at {threads} threads)" if occ is not None else "-"
        lines.append(f"| {f} | `{short}` | {k['regs']} | {k['spill_st']} / {k['spill_ld']} | {k['frame']} | "
                     f"{k['smem']} | {occ_text} |")
    report = "\n".join(lines) + "\n"
    if a.out:
        with open(a.out, "w") as fh:
            fh.write(report)
    print(report)
    spilling = [r for r in rows if r[2]["spill_st"] + r[2]["spill_ld"] > a.max_spill]
    for f, name, k, _, _ in spilling:
        print(f"cuda_ptxas_report: {f}: {name} spills {k['spill_st']} / {k['spill_ld']} bytes "
              f"(limit {a.max_spill})", file=sys.stderr)
    print(f"cuda_ptxas_report: {len(rows)} kernels, {len(spilling)} spilling", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
