#!/usr/bin/env python3
"""Installs the library into a scratch prefix and builds the consumer program
against it twice: through pkg-config and through CMake's find_package. Both
builds must compile and run. Usage: check_install.py BUILD_DIR SOURCE_DIR"""
import glob
import os
import shutil
import subprocess
import sys
import tempfile


def run(command, **kwargs):
    print("+", " ".join(command), flush=True)
    subprocess.run(command, check=True, **kwargs)


def main() -> int:
    build_dir, source_dir = sys.argv[1], sys.argv[2]
    with tempfile.TemporaryDirectory() as scratch:
        destdir = os.path.join(scratch, "root")
        run(["meson", "install", "-C", build_dir, "--no-rebuild", "--destdir", destdir],
            stdout=subprocess.DEVNULL)
        pcs = glob.glob(os.path.join(destdir, "**", "streamexecutor.pc"), recursive=True)
        configs = glob.glob(os.path.join(destdir, "**", "streamexecutorConfig.cmake"), recursive=True)
        if not pcs or not configs:
            print("install did not produce streamexecutor.pc and streamexecutorConfig.cmake")
            return 1
        prefix = os.path.join(destdir, "usr", "local")
        if not os.path.isdir(os.path.join(prefix, "include", "streamexecutor")):
            prefix = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(pcs[0]))))

        # pkg-config: the .pc file names the real prefix; point it at the scratch copy.
        env = dict(os.environ, PKG_CONFIG_PATH=os.path.dirname(pcs[0]))
        flags = subprocess.run(["pkg-config", f"--define-variable=prefix={prefix}", "--cflags", "--libs",
                                "streamexecutor"], check=True, capture_output=True, text=True, env=env).stdout.split()
        exe = os.path.join(scratch, "consumer_pkgconfig")
        run([os.environ.get("CXX", "c++"), os.path.join(source_dir, "consumer.cpp"), "-o", exe] + flags)
        run([exe])

        if shutil.which("cmake"):
            cmake_build = os.path.join(scratch, "cmake")
            run(["cmake", "-S", source_dir, "-B", cmake_build, f"-DCMAKE_PREFIX_PATH={prefix}"],
                stdout=subprocess.DEVNULL)
            run(["cmake", "--build", cmake_build])
            run([os.path.join(cmake_build, "consumer")])
        else:
            print("cmake is not installed: only the pkg-config consumer was checked")
            return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
