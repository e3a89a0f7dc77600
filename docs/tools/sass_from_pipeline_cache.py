#!/usr/bin/env python3
"""Disassemble the step kernel that NVIDIA's Vulkan driver compiled, from the pipeline cache data
that `step_kernel_stats --dump DIR` writes (`DIR/step_<columns>_<mode>.pipeline_cache`).

NVIDIA offers no internal representation through VK_KHR_pipeline_executable_properties, but its
pipeline cache data holds the compiled kernel: a zstd frame whose content holds the machine code,
found here as the first offset from which the binary size the driver reports ("Binary Size" in
step_kernel_stats' output) disassembles without an error. Prints the instruction count, the
instructions of the row loop between its barriers (the kernel's phases, in order), and the most
common opcodes; writes the disassembly to OUT.

    pip install zstandard nvidia-cuda-nvdisasm
    python3 docs/tools/sass_from_pipeline_cache.py CACHE BINARY_SIZE OUT [--arch SM90]
"""
import collections
import glob
import os
import re
import subprocess
import sys
import tempfile

import zstandard


def nvdisasm():
    found = glob.glob(os.path.join(sys.prefix, "lib", "python3*", "site-packages", "nvidia", "*", "bin", "nvdisasm"))
    return found[0] if found else "nvdisasm"


def main():
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    arch = sys.argv[sys.argv.index("--arch") + 1] if "--arch" in sys.argv else "SM90"
    if "--arch" in sys.argv:
        args.remove(arch)
    cache, size, out = args[0], int(args[1]), args[2]
    data = open(cache, "rb").read()
    frame = data.find(b"\x28\xb5\x2f\xfd")
    if frame < 0:
        sys.exit("no zstd frame in the cache data")
    blob = zstandard.ZstdDecompressor().decompressobj().decompress(data[frame:])
    tool = nvdisasm()
    with tempfile.NamedTemporaryFile(suffix=".bin") as code:
        for start in range(0, min(len(blob), 1 << 16), 8):
            code.seek(0)
            code.truncate()
            code.write(blob[start:start + size])
            code.flush()
            r = subprocess.run([tool, "-b", arch, code.name], capture_output=True, text=True)
            if r.returncode == 0 and not r.stderr and "EXIT" in r.stdout:
                break
        else:
            sys.exit("no code of that size disassembles")
    open(out, "w").write(r.stdout)
    code = []
    for line in r.stdout.splitlines():
        m = re.match(r"\s*/\*([0-9a-f]{4,})\*/\s+(@!?U?P\w+\s+)?([A-Z][A-Z0-9_.]*)(.*)", line)
        if m:
            code.append((int(m.group(1), 16), m.group(3), m.group(4)))
    # The row loop: the last backward branch to an early address.
    loops = [(a, int(t, 16)) for a, op, rest in code if op == "BRA" for t in re.findall(r"0x([0-9a-f]+)", rest)[:1] if int(t, 16) < a]
    tail, head = loops[-1]
    bars = [a for a, op, _ in code if op.startswith("BAR") and head <= a <= tail]
    cuts = [head] + bars + [tail + 16]
    phases = [sum(1 for a, _, _ in code if lo <= a < hi) for lo, hi in zip(cuts, cuts[1:])]
    ops = collections.Counter(op.split(".")[0] for _, op, _ in code)
    print(f"{cache}: {len(code)} instructions at offset {start}; row loop {hex(head)}..{hex(tail)}: "
          f"{sum(phases)}, between its barriers {phases}")
    print("  " + " ".join(f"{k}:{v}" for k, v in ops.most_common(30)))


if __name__ == "__main__":
    main()
