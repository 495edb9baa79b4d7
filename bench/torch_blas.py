"""Which BLAS the PyTorch peers run on, and a guard against the slow one.

Debian's python3-torch takes its matrix products from whatever provides
libblas.so.3. Installed without recommends, that is the reference BLAS
(libblas3), about 30x slower than OpenBLAS on this machine (6 against ~200
GFLOP/s for a 768x512 by 512x512 product), and a comparison with it would
flatter lmbook. The peers call require_fast_blas() first; install OpenBLAS
with `apt-get install -y libopenblas0`, or pass --allow-reference-blas to
measure the slow configuration on purpose.
"""
import sys

import torch


def blas_libraries():
    """The BLAS shared libraries mapped into this process, after one product loads them."""
    _ = torch.randn(64, 64) @ torch.randn(64, 64)
    with open("/proc/self/maps") as maps:
        return sorted({line.split()[-1] for line in maps if "blas" in line.lower() and "/" in line})


def require_fast_blas(argv=None):
    """Exits with a message unless an optimised BLAS (OpenBLAS, MKL, BLIS) is loaded.

    `--allow-reference-blas` in argv turns the exit into a warning (and is
    removed from argv, so the script's own parser never sees it).
    """
    argv = sys.argv if argv is None else argv
    allow = "--allow-reference-blas" in argv
    if allow:
        argv.remove("--allow-reference-blas")
    libs = blas_libraries()
    if any(name in lib for lib in libs for name in ("openblas", "mkl", "blis")):
        return libs
    msg = (
        f"PyTorch is using the reference BLAS ({', '.join(libs) or 'none found'}): matrix products run about 30x "
        "slower than with OpenBLAS, and the comparison would flatter lmbook. Install OpenBLAS "
        "(apt-get install -y libopenblas0) or pass --allow-reference-blas to measure it anyway."
    )
    if not allow:
        sys.exit(msg)
    print(f"warning: {msg}", file=sys.stderr)
    return libs
