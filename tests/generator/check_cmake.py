#!/usr/bin/env python3
"""streamexecutor_kernel_header() from the source tree's cmake/ file: a CMake
project generates a header from KERNELS, builds a consumer with it, runs it,
then touches KERNELS and checks that the header is generated again. With
COMP (a GLSL compute shader), the same for a header from it and for the
.spv file streamexecutor_add_spirv() writes, which must hold the header's words.
Usage: check_cmake.py SOURCE_ROOT CONSUMER_DIR KERNELS [COMP]"""
import os
import shutil
import subprocess
import sys
import tempfile


def main() -> int:
    source_root, consumer_dir, kernels = sys.argv[1:4]
    comp = sys.argv[4] if len(sys.argv) > 4 else None
    if not shutil.which("cmake"):
        print("cmake is not installed")
        return 1
    with tempfile.TemporaryDirectory() as scratch:
        copy = os.path.join(scratch, "kernels.cl")
        shutil.copy(kernels, copy)
        comp_copy = os.path.join(scratch, "shader.comp")
        extra = []
        if comp:
            shutil.copy(comp, comp_copy)
            extra.append("-DSE_COMP=" + comp_copy)
        build = os.path.join(scratch, "build")
        subprocess.run(["cmake", "-S", consumer_dir, "-B", build, "-DSE_KERNELS=" + copy,
                        "-DSE_KERNEL_HEADER_CMAKE=" + os.path.join(source_root, "cmake", "streamexecutorKernelHeader.cmake"),
                        "-DSE_INCLUDE=" + os.path.join(source_root, "include")] + extra,
                       check=True, stdout=subprocess.DEVNULL)
        subprocess.run(["cmake", "--build", build], check=True, stdout=subprocess.DEVNULL)
        subprocess.run([os.path.join(build, "consumer")], check=True)
        if comp:
            subprocess.run([os.path.join(build, "consumer_glsl")], check=True)
        header = os.path.join(build, "kernels.gpu.h")
        before = os.stat(header).st_mtime_ns
        with open(copy, "a", encoding="utf-8") as f:
            f.write("\n__kernel void added_later(__global int* x) { x[0] = 1; }\n")
        subprocess.run(["cmake", "--build", build], check=True, stdout=subprocess.DEVNULL)
        with open(header, encoding="utf-8") as f:
            regenerated = "AddedLater" in f.read()
        if os.stat(header).st_mtime_ns == before or not regenerated:
            print("editing the kernel file did not regenerate the header")
            return 1
        print("streamexecutor_kernel_header: generated, built, ran, regenerated after an edit")
        if comp:
            # A new kernel name must reach both the header and the .spv file.
            with open(comp_copy, encoding="utf-8") as f:
                text = f.read()
            with open(comp_copy, "w", encoding="utf-8") as f:
                f.write("// se:kernel renamed_later\n" + text.replace("se:kernel", "(was) kernel"))
            subprocess.run(["cmake", "--build", build], check=True, stdout=subprocess.DEVNULL)
            with open(os.path.join(build, "shader.gpu.h"), encoding="utf-8") as f:
                renamed = "RenamedLater" in f.read()
            with open(os.path.join(build, "shader.spv"), "rb") as f:
                spirv_renamed = b"renamed_later" in f.read()
            if not renamed or not spirv_renamed:
                print(f"editing the .comp file did not regenerate the {'header' if not renamed else '.spv file'}")
                return 1
            subprocess.run([os.path.join(build, "consumer_glsl")], check=True)
            print("streamexecutor_kernel_header and streamexecutor_add_spirv on a .comp file: generated, built, ran, "
                  "regenerated after an edit")
    return 0


if __name__ == "__main__":
    sys.exit(main())
