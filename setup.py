"""Build hook: the wheel carries the bundled examples inside the package.

`relay demo` needs `examples/demo_cnn.onnx` and `examples/mlp_loop.relay`; in a checkout they
live at the top level (where the README's commands use them), in an installed wheel they are
`relay_import/examples/` (found by `relay_import.examples_dir()`). Everything else is declared
in setup.cfg.
"""

import shutil
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

ROOT = Path(__file__).resolve().parent
EXAMPLES = ("demo_cnn.onnx", "mlp_loop.relay", "make_demo_model.py", "c/run_model.c")


class BuildPyWithExamples(build_py):
    def run(self):
        super().run()
        if getattr(self, "editable_mode", False):  # an editable install reads the checkout
            return
        dest = Path(self.build_lib) / "relay_import" / "examples"
        for name in EXAMPLES:
            target = dest / name
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(ROOT / "examples" / name, target)


setup(cmdclass={"build_py": BuildPyWithExamples})
