"""Shared test set-up."""

from tests.zoo.catalog import import_torchvision

# An installed torchvision whose C extension does not load beside our torch breaks
# `import transformers`; import it once, safely, before any test does.
try:
    import torch  # noqa: F401

    import_torchvision()
except ImportError:
    pass


# Kernel tests (tools.kernel_jit) build the same LLVM module more than once: once per thread
# count (an argument of the kernel, not part of its code), in either worker. The machine code is
# kept by IR text in one directory for the whole run, shared by the workers (they inherit the
# controller's environment), and removed at its end: nothing outlives the run.
def pytest_configure(config):
    import os
    import tempfile

    if os.environ.get("PYTEST_XDIST_WORKER") or os.environ.get("RELAY_KERNEL_JIT_CACHE"):
        return
    d = tempfile.mkdtemp(prefix="relay-kernel-jit-")
    os.environ["RELAY_KERNEL_JIT_CACHE"] = d
    config._relay_kernel_jit_cache = d


def pytest_unconfigure(config):
    import os
    import shutil

    d = getattr(config, "_relay_kernel_jit_cache", None)
    if d:
        shutil.rmtree(d, ignore_errors=True)
        os.environ.pop("RELAY_KERNEL_JIT_CACHE", None)
