#!/usr/bin/env python3
"""Consumers on another machine: installs the library into a scratch prefix,
moves the installed tree elsewhere (the package must be relocatable), and
builds consumer.cpp against it through every route a consumer takes:
pkg-config per backend, CMake components, add_subdirectory() of the source
tree, and a Meson subproject, each also separately compiled
(STREAMEXECUTOR_SEPARATE_COMPILATION) except the CMake package. Every program
built must run.
With CANNED (comma-separated, of blas,rng,fft,dnn: the families whose host
library the build found), canned_consumer.cpp runs one operation of each on
the host backend through pkg-config (streamexecutor-<family>.pc), the CMake
package's components and add_subdirectory(), and its results are checked.
Usage: check_install.py BUILD_DIR CONSUMER_DIR SOURCE_ROOT BACKENDS [CANNED]"""
import glob
import json
import os
import shlex
import shutil
import subprocess
import sys
import tempfile
import time


def run(command, **kwargs):
    print("+", " ".join(command), flush=True)
    start = time.monotonic()
    result = subprocess.run(command, check=True, **kwargs)
    # Each step's time, so that the slow routes are visible in the test log.
    print(f"  ({time.monotonic() - start:.1f} s)", flush=True)
    return result


def output(command, **kwargs):
    return subprocess.run(command, check=True, capture_output=True, text=True, **kwargs).stdout


def check_runs(exe, expect_platforms):
    text = output([exe])
    print(text.strip())
    missing = [name for name in expect_platforms if name not in text]
    if missing:
        raise SystemExit(f"{exe}: expected the platforms {missing} in: {text}")


def main() -> int:
    build_dir, consumer_dir, source_root, backends = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4].split(",")
    canned = [family for family in (sys.argv[5] if len(sys.argv) > 5 else "").split(",") if family]
    cxx = os.environ.get("CXX", "c++")
    with tempfile.TemporaryDirectory() as scratch:
        destdir = os.path.join(scratch, "root")
        run(["meson", "install", "-C", build_dir, "--no-rebuild", "--destdir", destdir], stdout=subprocess.DEVNULL)
        pcs = glob.glob(os.path.join(destdir, "**", "share", "pkgconfig", "streamexecutor.pc"), recursive=True)
        if not pcs:
            print("install did not put streamexecutor.pc under share/pkgconfig (the package is arch-independent)")
            return 1
        installed_prefix = os.path.dirname(os.path.dirname(os.path.dirname(pcs[0])))
        # Somewhere the build never knew about: nothing may point back at the install prefix.
        prefix = os.path.join(scratch, "elsewhere", "opt", "se")
        shutil.copytree(installed_prefix, prefix, symlinks=True)
        shutil.rmtree(destdir)
        pc_dir = os.path.join(prefix, "share", "pkgconfig")
        if not os.path.isfile(os.path.join(prefix, "share", "cmake", "streamexecutor", "streamexecutorConfig.cmake")):
            print("install did not put the CMake package under share/cmake/streamexecutor")
            return 1

        # The canned consumer prints "<family>: ok" for each family that gave the
        # right values; with the CUDA (Vulkan) backend, it also says whether the
        # Philox PTX (SPIR-V), compiled when the package was built, was embedded.
        philox_inc = os.path.join(prefix, "include", "streamexecutor", "canned", "rng", "philox_ptx.inc")
        canned_expect = [f"{family}: ok" for family in canned]
        if "rng" in canned and "cuda" in backends and os.path.isfile(philox_inc):
            canned_expect.append("rng: CUDA Philox PTX embedded")
        philox_spirv_inc = os.path.join(prefix, "include", "streamexecutor", "canned", "rng", "philox_spirv.inc")
        if "rng" in canned and "vulkan" in backends and os.path.isfile(philox_spirv_inc):
            canned_expect.append("rng: Vulkan Philox SPIR-V embedded")
        canned_defines = [f"-DSE_CONSUMER_{family.upper()}=1" for family in canned]

        # ---- pkg-config: one file per backend, relocatable, no -std pushed --------
        env = dict(os.environ, PKG_CONFIG_PATH=pc_dir)
        # streamexecutor.pc is the core with the host backend; every other backend has streamexecutor-<tag>.pc.
        packages = {backend: "streamexecutor" if backend == "host" else f"streamexecutor-{backend}" for backend in backends}
        for backend in backends:
            flags = output(["pkg-config", "--cflags", "--libs", packages[backend]], env=env).split()
            if any(flag.startswith("-std=") for flag in flags):
                print(f"{packages[backend]}.pc sets a language standard: {flags}")
                return 1
            if not any(flag.startswith("-I" + prefix) for flag in flags):
                print(f"{packages[backend]}.pc does not point at the relocated prefix {prefix}: {flags}")
                return 1
            exe = os.path.join(scratch, f"consumer_pkgconfig_{backend}")
            run([cxx, "-std=c++20", os.path.join(consumer_dir, "consumer.cpp"), "-o", exe] + flags)
            check_runs(exe, ["host", backend])

        # ---- pkg-config, separately compiled: the project compiles
        # <streamexecutor/src.hpp> in one unit of its own (docs/separate_compilation.md)
        flags = output(["pkg-config", "--cflags", "--libs"] + [packages[b] for b in backends], env=env).split()
        part = os.path.join(scratch, "streamexecutor_part.cpp")
        with open(part, "w", encoding="utf-8") as f:
            f.write("#include <streamexecutor/src.hpp>\n")
        exe = os.path.join(scratch, "consumer_pkgconfig_separate")
        run([cxx, "-std=c++20", "-DSTREAMEXECUTOR_SEPARATE_COMPILATION=1", os.path.join(consumer_dir, "consumer.cpp"),
             part, "-o", exe] + flags)
        check_runs(exe, backends)

        # ---- pkg-config: one file per canned family found -------------------------
        for family in ("blas", "rng", "fft", "dnn", "collectives"):
            if family in canned and not os.path.isfile(os.path.join(pc_dir, f"streamexecutor-{family}.pc")):
                print(f"install did not put streamexecutor-{family}.pc under share/pkgconfig")
                return 1
        if canned:
            # shlex: a define's quotes (STREAMEXECUTOR_RANDOM123_INCLUDE_DIR="...") must survive.
            flags = shlex.split(output(["pkg-config", "--cflags", "--libs"] +
                                       [f"streamexecutor-{family}" for family in canned], env=env))
            if any(flag.startswith("-std=") for flag in flags):
                print(f"the canned .pc files set a language standard: {flags}")
                return 1
            exe = os.path.join(scratch, "canned_consumer_pkgconfig")
            run([cxx, "-std=c++20", os.path.join(consumer_dir, "canned_consumer.cpp"), "-o", exe] +
                canned_defines + flags)
            check_runs(exe, canned_expect)

        if not shutil.which("cmake"):
            print("cmake is not installed: the CMake routes were not checked")
            return 1

        # ---- CMake: components, only their own dependencies ------------------------
        def cmake_consumer(name, *options, program="consumer"):
            build = os.path.join(scratch, name)
            run(["cmake", "-S", consumer_dir, "-B", build] + list(options), stdout=subprocess.DEVNULL)
            run(["cmake", "--build", build], stdout=subprocess.DEVNULL)
            return os.path.join(build, program)

        def cmake_configure(name, *options):
            run(["cmake", "-S", consumer_dir, "-B", os.path.join(scratch, name)] + list(options),
                stdout=subprocess.DEVNULL)

        check_runs(cmake_consumer("cmake_host", f"-DCMAKE_PREFIX_PATH={prefix}"), ["host"])
        # Asking for host only must not look for OpenCL: hide it and still
        # succeed. Configuring is the check (a component that needed OpenCL
        # fails there); cmake_canned_host below also builds and runs without it.
        hidden_opencl = "-DCMAKE_DISABLE_FIND_PACKAGE_OpenCL=TRUE"
        if canned:
            cmake_configure("cmake_host_no_opencl", f"-DCMAKE_PREFIX_PATH={prefix}", hidden_opencl)
        else:
            check_runs(cmake_consumer("cmake_host_no_opencl", f"-DCMAKE_PREFIX_PATH={prefix}", hidden_opencl),
                       ["host"])
        # Each backend's component asked for alone finds its own dependencies.
        # With canned families, cmake_canned_all builds and runs the consumer
        # over every component, so each one alone is configured, not rebuilt
        # (about 6 s of compiling each).
        for backend in backends:
            if backend == "host":
                continue
            options = [f"-DCMAKE_PREFIX_PATH={prefix}", f"-DSE_COMPONENTS=host;{backend}"]
            if canned:
                cmake_configure(f"cmake_{backend}", *options)
            else:
                check_runs(cmake_consumer(f"cmake_{backend}", *options), ["host", backend])
        bad = subprocess.run(["cmake", "-S", consumer_dir, "-B", os.path.join(scratch, "cmake_bad"),
                              f"-DCMAKE_PREFIX_PATH={prefix}", "-DSE_COMPONENTS=tpu"], capture_output=True, text=True)
        if bad.returncode == 0 or "component 'tpu' is not in this installation" not in bad.stdout + bad.stderr:
            print(f"asking for a component that does not exist did not fail clearly:\n{bad.stdout}{bad.stderr}")
            return 1
        print("find_package(streamexecutor COMPONENTS tpu) fails: component 'tpu' is not in this installation")

        # ---- CMake: the canned components, over host only and over every backend --
        if canned:
            canned_list = "-DSE_CANNED=" + ";".join(canned)
            # Host only: the components look for the host libraries, not OpenCL's.
            check_runs(cmake_consumer("cmake_canned_host", f"-DCMAKE_PREFIX_PATH={prefix}", canned_list,
                                      "-DCMAKE_DISABLE_FIND_PACKAGE_OpenCL=TRUE", program="canned_consumer"),
                       [line for line in canned_expect if "CUDA" not in line and "Vulkan" not in line])
            check_runs(cmake_consumer("cmake_canned_all", f"-DCMAKE_PREFIX_PATH={prefix}", canned_list,
                                      "-DSE_COMPONENTS=" + ";".join(backends), program="canned_consumer"),
                       canned_expect)
            # The same build's consumer links every backend's component.
            check_runs(os.path.join(scratch, "cmake_canned_all", "consumer"), backends)
        # A requested family whose library this machine lacks fails naming the
        # package: Random123's directory is hidden from CMake's searches.
        random123_dirs = [d for d in ("/usr/include", "/usr/local/include", "/opt/local/include")
                          if os.path.isfile(os.path.join(d, "Random123", "philox.h"))]
        if "rng" in canned and random123_dirs:
            bad = subprocess.run(["cmake", "-S", consumer_dir, "-B", os.path.join(scratch, "cmake_no_random123"),
                                  f"-DCMAKE_PREFIX_PATH={prefix}", "-DSE_CANNED=rng",
                                  "-DCMAKE_IGNORE_PATH=" + ";".join(random123_dirs)],
                                 capture_output=True, text=True)
            expected = "component 'rng' needs Random123 (Random123/philox.h), which was not found " \
                       "(Debian: apt-get install librandom123-dev)"
            # (CMake wraps the message's lines.)
            if bad.returncode == 0 or expected not in " ".join((bad.stdout + bad.stderr).split()):
                print(f"asking for rng without Random123 did not fail naming the package:\n{bad.stdout}{bad.stderr}")
                return 1
            print("find_package(streamexecutor COMPONENTS rng) without Random123 fails: " + expected)

        # ---- The typed kernel header generator, installed with the CMake package ----
        for installed in ("share/streamexecutor/se_kernel_header.py",
                          "share/cmake/streamexecutor/streamexecutorKernelHeader.cmake"):
            if not os.path.isfile(os.path.join(prefix, installed)):
                print(f"install did not put {installed} in the package")
                return 1
        generator_consumer = os.path.join(source_root, "tests", "generator", "cmake_consumer")
        kernels = os.path.join(source_root, "tests", "generator", "kernels.cl")
        build = os.path.join(scratch, "cmake_kernel_header")
        run(["cmake", "-S", generator_consumer, "-B", build, f"-DCMAKE_PREFIX_PATH={prefix}", f"-DSE_KERNELS={kernels}"],
            stdout=subprocess.DEVNULL)
        run(["cmake", "--build", build], stdout=subprocess.DEVNULL)
        check_runs(os.path.join(build, "consumer"), ["CMake-generated header: ok"])

        # ---- add_subdirectory() of the source tree (what FetchContent does) --------
        subdirectory_options = [f"-DSE_SOURCE_TREE={source_root}", "-DSE_COMPONENTS=" + ";".join(backends)]
        if canned:
            subdirectory_options.append("-DSE_CANNED=" + ";".join(canned))
        check_runs(cmake_consumer("cmake_subdirectory", *subdirectory_options), backends)
        # streamexecutor::separate: the compiled part as a static library.
        check_runs(os.path.join(scratch, "cmake_subdirectory", "consumer_separate"), backends)
        if canned:
            # Built by the same cmake --build: streamexecutor::blas, ::rng, ::fft, ::dnn from the source tree
            # (with CUDA and nvcc, the Philox PTX compiled by CMake).
            check_runs(os.path.join(scratch, "cmake_subdirectory", "canned_consumer"), canned_expect)

        # ---- A Meson subproject: the library only, no tests or examples ------------
        project = os.path.join(scratch, "meson_consumer")
        os.makedirs(os.path.join(project, "subprojects"))
        os.symlink(source_root, os.path.join(project, "subprojects", "streamexecutor"))
        shutil.copy(os.path.join(consumer_dir, "consumer.cpp"), project)
        with open(os.path.join(project, "meson.build"), "w", encoding="utf-8") as f:
            f.write("project('consumer', 'cpp', default_options: ['cpp_std=c++20'])\n"
                    "se = dependency('streamexecutor', fallback: ['streamexecutor', 'streamexecutor_dep'])\n"
                    "executable('consumer', 'consumer.cpp', dependencies: se)\n"
                    "se_separate = dependency('streamexecutor-separate',\n"
                    "                         fallback: ['streamexecutor', 'streamexecutor_separate_dep'])\n"
                    "executable('consumer_separate', 'consumer.cpp', dependencies: se_separate)\n")
        meson_build = os.path.join(project, "build")
        run(["meson", "setup", meson_build, project, "-Dstreamexecutor:cuda=disabled"], stdout=subprocess.DEVNULL)
        targets = output(["meson", "introspect", "--targets", meson_build])
        if "generic_host" in targets or "add_mystery_value" in targets:
            print("as a subproject, the library still builds its tests or examples")
            return 1
        run(["meson", "compile", "-C", meson_build], stdout=subprocess.DEVNULL)
        check_runs(os.path.join(meson_build, "consumer"), ["host"])
        check_runs(os.path.join(meson_build, "consumer_separate"), ["host"])
        print("Meson subproject: library only, consumer built and ran")

        # With CUDA and nvcc, a consumer that never uses the RNG family does not
        # build the Philox PTX: nvcc is not part of its default build.
        if "cuda" in backends:
            cuda_build = os.path.join(project, "build_cuda")
            run(["meson", "setup", cuda_build, project], stdout=subprocess.DEVNULL)
            built = json.loads(output(["meson", "introspect", "--targets", cuda_build]))
            philox = [t for t in built if t["name"].startswith("philox")]
            eager = [t["name"] for t in philox if t.get("build_by_default")]
            if eager:
                print(f"as a subproject, the default build still runs nvcc for the Philox PTX: {eager}")
                return 1
            print(f"Meson subproject with CUDA: the Philox PTX is built on demand only ({len(philox)} targets)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
