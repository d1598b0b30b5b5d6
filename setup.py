"""Builds the `frame` wheel: the pybind11 extension and libframe.so come from a CMake build
directory (FRAME_BUILD_DIR when set, e.g. the README's `build/`; otherwise `build/pip`, configured
and built here with CMake + Ninja), and are copied next to the package's Python files; the
extension finds libframe.so through its $ORIGIN rpath. Metadata lives in pyproject.toml."""

import glob
import os
import shutil
import subprocess
import sys

from setuptools import setup
from setuptools.command.build_py import build_py
from setuptools.dist import Distribution

ROOT = os.path.dirname(os.path.abspath(__file__))


def cmake_build_dir() -> str:
    given = os.environ.get("FRAME_BUILD_DIR")
    if given:
        return os.path.abspath(given)
    build = os.path.join(ROOT, "build", "pip")
    subprocess.check_call([
        "cmake", "-S", ROOT, "-B", build, "-G", "Ninja", "-DCMAKE_BUILD_TYPE=Release",
        "-DFRAME_BUILD_TESTS=OFF", "-DFRAME_WERROR=OFF", f"-DPython_EXECUTABLE={sys.executable}"])
    subprocess.check_call(["cmake", "--build", build, "--target", "_frame", "-j",
                           str(os.cpu_count() or 1)])
    return build


class BuildWithCMake(build_py):
    def run(self) -> None:
        super().run()
        build = cmake_build_dir()
        dest = os.path.join(self.build_lib, "frame")
        os.makedirs(dest, exist_ok=True)
        ext = glob.glob(os.path.join(build, "python", "frame", "_frame*.so"))
        lib = glob.glob(os.path.join(build, "libframe.so*"))
        if not ext or not lib:
            raise RuntimeError(f"no _frame*.so / libframe.so in {build}: build target _frame first")
        for f in ext + lib:
            shutil.copy2(f, dest)


class BinaryDistribution(Distribution):
    def has_ext_modules(self) -> bool:  # platform wheel: it carries compiled code
        return True


setup(cmdclass={"build_py": BuildWithCMake}, distclass=BinaryDistribution,
      options={"build": {"build_base": os.path.join("build", "setuptools")}})
