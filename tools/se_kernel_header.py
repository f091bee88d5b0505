#!/usr/bin/env python3
"""Generates a C++ header of typed kernels from OpenCL C (.cl) and CUDA (.cu)
kernel files: per kernel, a streamexecutor TypedKernel alias whose parameters
come from the kernel's own signature (read by libclang, python3-clang), and a
function returning its MultiKernelLoaderSpec with the code embedded (OpenCL
source; PTX and fatbin from nvcc). See docs/generator.md.

  se_kernel_header.py saxpy.cl [saxpy.cu ...] -o saxpy.gpu.h [--namespace gpucc]

Kernels of the same name in several inputs become one spec with every
input's code; their signatures must map to the same C++ types."""
import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile

try:
    import clang.cindex as ci
except ImportError:
    sys.exit("se_kernel_header.py: error: libclang's Python bindings are missing (Debian: apt-get install python3-clang)")

K = ci.CursorKind
T = ci.TypeKind
SE = "::streamexecutor::"
PROBE = "/se_kernel_header/probe.cu"
PRELUDE = "/se_kernel_header/prelude.h"
# Kernel bodies are skipped when parsing CUDA (nvcc compiles them next), so
# only the declarations need the CUDA keywords; the toolkit's own headers
# (cuda_fp16.h ...) are still read, for the types they define.
CUDA_PRELUDE = """
#define __global__ __attribute__((global))
#define __device__ __attribute__((device))
#define __host__ __attribute__((host))
#define __shared__ __attribute__((shared))
#define __constant__ __attribute__((constant))
#define __managed__ __attribute__((managed))
#define __forceinline__ __inline__ __attribute__((always_inline))
#define __noinline__ __attribute__((noinline))
#define __launch_bounds__(...) __attribute__((launch_bounds(__VA_ARGS__)))
#include <__clang_cuda_builtin_vars.h>
"""
# The C++ spelling of each builtin kind: fixed-width names where the LP64
# type is that alias, so that the library's load-time checks (which classify
# the compiler's own spelling) and the launch-time narrowing rules agree.
SCALARS = {
    T.SCHAR: "std::int8_t", T.UCHAR: "std::uint8_t", T.CHAR_U: "char",
    T.SHORT: "std::int16_t", T.USHORT: "std::uint16_t", T.INT: "std::int32_t", T.UINT: "std::uint32_t",
    T.LONG: "std::int64_t", T.ULONG: "std::uint64_t", T.LONGLONG: "long long", T.ULONGLONG: "unsigned long long",
    T.FLOAT: "float", T.DOUBLE: "double", T.BOOL: "bool",
    # C++20 has no 16-bit float: OpenCL half travels as its bits, which the
    # OpenCL signature check accepts.
    T.HALF: "std::uint16_t",
}
OPENCL_NAMES = {T.CHAR_S: "char", T.SCHAR: "char", T.UCHAR: "uchar", T.SHORT: "short", T.USHORT: "ushort",
                T.INT: "int", T.UINT: "uint", T.LONG: "long", T.ULONG: "ulong", T.FLOAT: "float",
                T.DOUBLE: "double", T.HALF: "half"}
# LangAS numbers that clang_getAddressSpace reports for OpenCL qualifiers.
AS_GLOBAL, AS_LOCAL, AS_CONSTANT = 1, 2, 3


class Error(Exception):
    pass


def where(cursor):
    loc = cursor.location
    return f"{loc.file.name if loc.file else '?'}:{loc.line}"


class Mapper:
    """C++ spellings of kernel parameter types, and the twins of the structs they use."""

    def __init__(self, opencl):
        self.opencl = opencl
        self.structs = {}  # name -> (definition text, origin)

    def param(self, cursor, ctype):
        t = ctype.get_canonical()
        if t.kind == T.POINTER:
            pointee = t.get_pointee()
            if self.opencl and pointee.get_address_space() == AS_LOCAL:
                return f"{SE}SharedDeviceMemory<{self.element(cursor, pointee)}>"
            if self.opencl and pointee.get_address_space() not in (AS_GLOBAL, AS_CONSTANT):
                raise Error(f"{where(cursor)}: error: parameter '{cursor.spelling}' points to private memory")
            return f"{SE}DeviceMemory<{self.element(cursor, pointee)}>*"
        if t.kind in (T.LVALUEREFERENCE, T.RVALUEREFERENCE):
            raise Error(f"{where(cursor)}: error: parameter '{cursor.spelling}' is a reference; kernels take values")
        return self.value(cursor, ctype)

    def element(self, cursor, pointee):
        if pointee.get_canonical().kind == T.VOID:
            return "std::byte"  # both load-time checks accept any element for void*
        if pointee.get_canonical().kind == T.POINTER:
            raise Error(f"{where(cursor)}: error: parameter '{cursor.spelling}' is a pointer to a pointer")
        return self.value(cursor, pointee)

    def value(self, cursor, ctype):
        t = ctype.get_canonical()
        if t.kind == T.CHAR_S:
            return "std::int8_t" if self.opencl else "char"  # OpenCL char is signed by definition
        if t.kind in SCALARS:
            return SCALARS[t.kind]
        if t.kind == T.RECORD:
            return self.record(cursor, ctype)
        if t.kind == T.EXTVECTOR:
            return self.vector(cursor, t)
        if t.kind == T.ENUM:
            return self.value(cursor, t.get_declaration().enum_type)
        raise Error(f"{where(cursor)}: error: '{cursor.spelling}' has type '{ctype.spelling}', "
                    "which has no C++ counterpart in a generated header")

    def vector(self, cursor, t):
        lanes = 4 if t.element_count == 3 else t.element_count  # 3-vectors occupy 4 lanes
        element = self.value(cursor, t.element_type)
        name = f"{OPENCL_NAMES.get(t.element_type.get_canonical().kind, 'vector')}{t.element_count}"
        body = f"struct alignas({t.get_align()}) {name} {{\n  {element} s[{lanes}];\n}};\n"
        return self.add_struct(name, body, t, [], cursor)

    def record(self, cursor, ctype):
        t = ctype.get_canonical()
        decl = t.get_declaration()
        name = decl.spelling
        if not name:  # typedef struct { ... } Name;
            named = ctype
            while named.kind == T.ELABORATED:
                named = named.get_named_type()
            name = named.get_typedef_name() or named.spelling.split()[-1]
        if not name or not name.isidentifier():
            raise Error(f"{where(cursor)}: error: '{cursor.spelling}' has an unnamed struct type")
        if decl.kind != K.STRUCT_DECL:
            raise Error(f"{where(decl)}: error: '{name}' is not a struct; only structs can be kernel parameters")
        if name in self.structs:
            return name
        fields, offsets = [], []
        for field in t.get_fields():
            if field.is_bitfield():
                raise Error(f"{where(field)}: error: bit-field '{field.spelling}' of '{name}' cannot be mirrored in C++")
            ft = field.type.get_canonical()
            suffix = ""
            while ft.kind == T.CONSTANTARRAY:
                suffix += f"[{ft.element_count}]"
                ft = ft.element_type.get_canonical()
            if ft.kind == T.POINTER:
                raise Error(f"{where(field)}: error: field '{field.spelling}' of '{name}' is a pointer: pass device "
                            "memory as a parameter of its own")
            fields.append(f"  {self.value(field, ft)} {field.spelling}{suffix};\n")
            offsets.append((field.spelling, field.get_field_offsetof() // 8))
        if not fields:
            raise Error(f"{where(decl)}: error: struct '{name}' has no fields")
        body = f"struct alignas({t.get_align()}) {name} {{\n{''.join(fields)}}};\n"
        return self.add_struct(name, body, t, offsets, decl)

    def add_struct(self, name, body, t, offsets, origin):
        # The kernel's compiler laid the struct out; the twin must match it byte for byte.
        checks = [f"static_assert(sizeof({name}) == {t.get_size()} && alignof({name}) == {t.get_align()}, "
                  f"\"{name}: layout differs from the kernel's\");\n"]
        checks += [f"static_assert(offsetof({name}, {field}) == {offset});\n" for field, offset in offsets]
        text = body + "".join(checks)
        if name in self.structs and self.structs[name][0] != text:
            raise Error(f"{where(origin)}: error: struct '{name}' differs from the one in "
                        f"{where(self.structs[name][1])}")
        self.structs.setdefault(name, (text, origin))
        return name


class Kernel:
    def __init__(self, name, params, origin):
        self.name, self.params, self.origin = name, params, origin
        self.code = []  # (setter, embedded code variable, kernel name in that code, extra arguments)


def check_diagnostics(tu, path):
    errors = [d for d in tu.diagnostics if d.severity >= ci.Diagnostic.Error]
    if errors:
        shown = [d.format(ci.Diagnostic.DisplaySourceLocation | ci.Diagnostic.DisplayColumn) for d in errors]
        raise Error("\n".join(shown) + f"\n{path}: {len(errors)} error(s); no header generated")


def parse(path, args, unsaved=(), skip_bodies=False):
    options = ci.TranslationUnit.PARSE_SKIP_FUNCTION_BODIES if skip_bodies else 0
    try:
        tu = ci.Index.create().parse(path, args=args, unsaved_files=list(unsaved), options=options)
    except ci.TranslationUnitLoadError as e:
        raise Error(f"{path}: error: libclang could not parse it ({e})")
    check_diagnostics(tu, path)
    return tu


def in_file(cursor, path):
    return cursor.location.file is not None and os.path.samefile(cursor.location.file.name, path)


def opencl_kernels(path, options):
    tu = parse(path, ["-x", "cl", "-Xclang", "-finclude-default-header"] + options.clang_arg + ["-cl-std=" + options.cl_std])
    mapper = Mapper(opencl=True)
    kernels = []
    for cursor in tu.cursor.get_children():
        if cursor.kind != K.FUNCTION_DECL or not cursor.is_definition() or not in_file(cursor, path):
            continue
        attributes = [next(a.get_tokens(), None) for a in cursor.get_children() if a.kind.is_attribute()]
        if any(token is not None and token.spelling in ("kernel", "__kernel") for token in attributes):
            params = [mapper.param(a, a.type) for a in cursor.get_arguments()]
            kernels.append(Kernel(cursor.spelling, params, cursor))
    with open(path, encoding="utf-8") as f:
        source = f.read()
    return tu, mapper, kernels, source


def cuda_root(nvcc):
    return os.path.dirname(os.path.dirname(os.path.realpath(nvcc)))


def explicit_instantiations(tu, path, names):
    """(template name, probe expression) for each `template __global__ void f<...>(...);`
    in the file. The front end then names the specialization; this only finds
    where instantiations are, token by token (libclang hides them from cursors)."""
    tokens = [t for t in tu.get_tokens(extent=tu.cursor.extent) if t.location.file and
              os.path.samefile(t.location.file.name, path)]
    found = []
    for i, token in enumerate(tokens):
        if token.spelling != "template" or i + 1 >= len(tokens) or tokens[i + 1].spelling == "<":
            continue
        if i > 0 and tokens[i - 1].spelling == "extern":
            continue  # a declaration: instantiated (and in the PTX) elsewhere
        end = next((j for j in range(i, len(tokens)) if tokens[j].spelling == ";"), len(tokens))
        for j in range(i + 1, end):
            if tokens[j].spelling not in names or tokens[j].kind != ci.TokenKind.IDENTIFIER:
                continue
            start = j
            while start >= 2 and tokens[start - 1].spelling == "::":
                start -= 2
            qualified = "".join(t.spelling for t in tokens[start:j + 1])
            opening = "<" if tokens[j + 1].spelling == "<" else "("
            close = {"<": ">", "(": ")"}[opening]
            depth, k = 0, j + 1
            while k < end:
                depth += {opening: 1, close: -1}.get(tokens[k].spelling, 0)
                if tokens[k].spelling == ">>" and opening == "<":
                    depth -= 2
                if depth <= 0:
                    break
                k += 1
            inner = " ".join(t.spelling for t in tokens[j + 2:k])
            expr = (f"&{qualified}<{inner}>" if opening == "<"
                    else f"static_cast<void (*)({inner})>(&{qualified})")
            found.append((tokens[j].spelling, expr, tokens[j]))
            break
    return found


def template_params(cursor):
    """(kind, name) per template parameter; names are our own, since the
    kernel's (`int Scale`) may clash with the generated alias (`Scale`)."""
    params = []
    for child in cursor.get_children():
        if child.kind == K.TEMPLATE_TYPE_PARAMETER:
            params.append(("typename", f"P{len(params)}"))
        elif child.kind == K.TEMPLATE_NON_TYPE_PARAMETER:
            params.append((child.type.get_canonical().spelling, f"P{len(params)}"))
        elif child.kind == K.TEMPLATE_TEMPLATE_PARAMETER:
            raise Error(f"{where(child)}: error: template template parameters are not supported")
    return params


def cuda_kernels(path, options):
    root = cuda_root(options.nvcc)
    args = ["-x", "cuda", "--cuda-device-only", "-nocudainc", "-nocudalib", f"--cuda-path={root}",
            "--cuda-gpu-arch=sm_75", "-std=" + options.std, "-include", PRELUDE,
            "-isystem", os.path.join(root, "include")] + options.clang_arg
    prelude = (PRELUDE, CUDA_PRELUDE)
    tu = parse(path, args, [prelude], skip_bodies=True)
    mapper = Mapper(opencl=False)
    kernels, templates, seen = [], {}, set()
    for cursor in tu.cursor.walk_preorder():
        if cursor.kind not in (K.FUNCTION_DECL, K.FUNCTION_TEMPLATE) or not in_file(cursor, path):
            continue
        # Bodies are skipped, so a definition cannot be told from a declaration:
        # each kernel is kept once, and those nvcc emits no entry for are dropped later.
        if not any(c.kind == K.CUDAGLOBAL_ATTR for c in cursor.get_children()) or cursor.get_usr() in seen:
            continue
        seen.add(cursor.get_usr())
        if cursor.kind == K.FUNCTION_TEMPLATE:
            templates[cursor.spelling] = cursor
        else:
            params = [mapper.param(a, a.type) for a in cursor.get_arguments()]
            kernels.append(Kernel(cursor.spelling, params, cursor))
            kernels[-1].symbol = cursor.mangled_name
    if templates:
        probes = explicit_instantiations(tu, path, templates)
        lines = [f'#include "{os.path.abspath(path)}"'] + [
            f"using __se_probe_{n} = decltype({expr});" for n, (_, expr, _) in enumerate(probes)]
        probe_tu = parse(PROBE, args, [prelude, (PROBE, "\n".join(lines) + "\n")], skip_bodies=True)
        refs = {}
        for cursor in probe_tu.cursor.get_children():
            if cursor.kind == K.TYPE_ALIAS_DECL and cursor.spelling.startswith("__se_probe_"):
                ref = next(c.referenced for c in cursor.walk_preorder() if c.kind == K.DECL_REF_EXPR)
                refs[int(cursor.spelling[len("__se_probe_"):])] = ref
        for n, (name, _, token) in enumerate(probes):
            spec = refs[n]
            targs = []
            for i in range(spec.get_num_template_arguments()):
                kind = spec.get_template_argument_kind(i)
                if kind == ci.TemplateArgumentKind.TYPE:
                    targs.append(mapper.value(spec, spec.get_template_argument_type(i)))
                elif kind == ci.TemplateArgumentKind.INTEGRAL:
                    declared = template_params(templates[name])[i][0]
                    if declared == "bool":  # int -> bool is not a converted constant expression
                        targs.append("true" if spec.get_template_argument_value(i) else "false")
                    elif declared.startswith("unsigned"):
                        targs.append(f"{spec.get_template_argument_unsigned_value(i)}u")
                    else:
                        targs.append(str(spec.get_template_argument_value(i)))
                else:
                    raise Error(f"{path}:{token.location.line}: error: template argument {i} of '{name}' is "
                                "neither a type nor an integer")
            params = [mapper.param(a, a.type) for a in spec.get_arguments()]
            kernel = Kernel(name, params, templates[name])
            kernel.symbol, kernel.template_args = spec.mangled_name, targs
            kernel.template_params = template_params(templates[name])
            kernels.append(kernel)
        for name, cursor in templates.items():
            if not any(k.name == name for k in kernels):
                print(f"{where(cursor)}: warning: kernel template '{name}' has no explicit instantiation "
                      "in this file, so no typed kernel is generated for it", file=sys.stderr)
    return tu, mapper, kernels


def nvcc(path, options, kind, out):
    command = [options.nvcc, "-" + kind, "-std=" + options.std] + options.nvcc_arg + [path, "-o", out]
    result = subprocess.run(command, capture_output=True, text=True)
    if result.returncode != 0:
        # nvcc says FILE(LINE): error; build tools and editors look for FILE:LINE: error.
        text = re.sub(r"^(.+?)\((\d+)\): ", r"\1:\2: ", result.stderr, flags=re.M)
        raise Error(f"{text.rstrip()}\n{path}: nvcc -{kind} failed; no header generated")
    with open(out, "rb") as f:
        return f.read()


def literal(name, data, text):
    """A C++ definition of `name` as a std::string_view over the bytes."""
    if text:
        decoded = data.decode("utf-8", errors="replace")
        delimiter = "se_code"
        while ")" + delimiter + '"' in decoded:
            delimiter += "_"
        # ISO C++ only promises 65536 characters in one literal (-Woverlength-strings).
        if len(data) < 60000 and decoded.encode("utf-8") == data:
            return f'inline constexpr std::string_view {name} = R"{delimiter}({decoded}){delimiter}";\n'
    rows = [", ".join(f"'\\x{b:02x}'" for b in data[i:i + 16]) for i in range(0, len(data), 16)]
    body = ",\n    ".join(rows)
    return (f"inline constexpr char {name}_bytes[] = {{\n    {body}}};\n"
            f"inline constexpr std::string_view {name}{{{name}_bytes, sizeof({name}_bytes)}};\n")


def camel(name):
    return "".join(part[:1].upper() + part[1:] for part in name.split("_") if part)


def identifier(path, suffix):
    stem = re.sub(r"\W", "_", os.path.basename(path))
    return f"{stem}_{suffix}"


def generate(inputs, options):
    kernels, structs, code, depends = {}, {}, [], set()
    for path in inputs:
        extension = os.path.splitext(path)[1]
        if extension == ".cl":
            tu, mapper, found, source = opencl_kernels(path, options)
            variable = identifier(path, "source")
            code.append(literal(variable, source.encode("utf-8"), True))
            for kernel in found:
                kernel.code.append(("AddOpenCLTextInMemory", variable, kernel.name, options.opencl_options))
        elif extension == ".cu":
            if not shutil.which(options.nvcc):
                raise Error(f"{path}: error: nvcc ('{options.nvcc}') was not found; it compiles .cu files")
            tu, mapper, found = cuda_kernels(path, options)
            with tempfile.TemporaryDirectory() as scratch:
                ptx = nvcc(path, options, "ptx", os.path.join(scratch, "k.ptx"))
                fatbin = None if options.no_fatbin else nvcc(path, options, "fatbin", os.path.join(scratch, "k.fatbin"))
            entries = set(re.findall(rb"\.entry\s+([\w$]+)", ptx))
            for kernel in [k for k in found if k.symbol.encode() not in entries]:
                print(f"{where(kernel.origin)}: warning: nvcc's PTX has no kernel '{kernel.symbol}' (declared, never "
                      "defined?): no typed kernel generated for it", file=sys.stderr)
                found.remove(kernel)
            code.append(literal(identifier(path, "ptx"), ptx, True))
            if fatbin is not None:
                code.append(literal(identifier(path, "fatbin"), fatbin, False))
            for kernel in found:
                if fatbin is not None:
                    kernel.code.append(("AddCudaFatbinInMemory", identifier(path, "fatbin"), kernel.symbol, None))
                kernel.code.append(("AddCudaPtxInMemory", identifier(path, "ptx"), kernel.symbol, None))
        else:
            raise Error(f"{path}: error: unknown kind of kernel file (expected .cl or .cu)")
        depends.update(include.include.name for include in tu.get_includes())
        for name, (text, origin) in mapper.structs.items():
            if name in structs and structs[name][0] != text:
                raise Error(f"{where(origin)}: error: struct '{name}' differs from the one in {where(structs[name][1])}")
            structs.setdefault(name, (text, origin))
        for kernel in found:
            key = (kernel.name, tuple(getattr(kernel, "template_args", ())))
            if key in kernels:
                other = kernels[key]
                if other.params != kernel.params or hasattr(other, "template_args") != hasattr(kernel, "template_args"):
                    raise Error(f"{where(kernel.origin)}: error: kernel '{kernel.name}' takes ({', '.join(kernel.params)})"
                                f" but in {where(other.origin)} it takes ({', '.join(other.params)})")
                other.code += kernel.code
            else:
                kernels[key] = kernel
    if not kernels:
        raise Error(f"{', '.join(inputs)}: error: no kernels found")
    return emit(inputs, options, kernels.values(), structs, code), depends


def emit(inputs, options, kernels, structs, code):
    names = ", ".join(os.path.basename(p) for p in inputs)
    out = [f"// Generated by se_kernel_header.py from {names}: edit the kernels, not this file.\n",
           "#pragma once\n\n#include <cstddef>\n#include <cstdint>\n#include <string_view>\n\n",
           "#include <streamexecutor/core/kernel.hpp>\n#include <streamexecutor/core/kernel_spec.hpp>\n\n",
           f"namespace {options.namespace} {{\n\n"]
    if structs:
        out.append("// C++ twins of the structs the kernels take by value, checked against the kernels' layout.\n")
        out += [text + "\n" for text, _ in structs.values()]
    out.append("namespace code {\n" + "".join(code) + "}  // namespace code\n\n")
    plain = [k for k in kernels if not hasattr(k, "template_args")]
    templated = {}
    for k in kernels:
        if hasattr(k, "template_args"):
            templated.setdefault(k.name, []).append(k)

    def spec_body(kernel, indent):
        lines = [f"{SE}MultiKernelLoaderSpec loader({len(kernel.params)});"]
        for setter, variable, symbol, extra in kernel.code:
            more = f", {cpp_string(extra)}" if extra else ""
            lines.append(f"loader.{setter}(code::{variable}, {cpp_string(symbol)}{more});")
        lines.append("return loader;")
        return "".join(f"{indent}{line}\n" for line in lines)

    seen = {}
    for kernel in list(plain) + [group[0] for group in templated.values()]:
        alias = camel(kernel.name)
        if seen.setdefault(alias, kernel.name) != kernel.name:
            raise Error(f"{where(kernel.origin)}: error: kernels '{seen[alias]}' and '{kernel.name}' would both be "
                        f"named {alias}")
    out.append("namespace kernel {\n")
    for kernel in plain:
        out.append(f"using {camel(kernel.name)} = {SE}TypedKernel<{', '.join(kernel.params)}>;\n")
    for name, group in templated.items():
        declared = ", ".join(f"{kind} {param}" for kind, param in group[0].template_params)
        used = ", ".join(param for _, param in group[0].template_params)
        out.append(f"\n// {name}: only the instantiations in the kernel file exist; other arguments leave\n"
                   f"// {camel(name)}<...> an incomplete type.\n"
                   f"template <{declared}>\nstruct {name}_instance;\n")
        for kernel in group:
            out.append(f"template <>\nstruct {name}_instance<{', '.join(kernel.template_args)}> {{\n"
                       f"  using type = {SE}TypedKernel<{', '.join(kernel.params)}>;\n"
                       f"  static {SE}MultiKernelLoaderSpec spec() {{\n{spec_body(kernel, '    ')}  }}\n}};\n")
        out.append(f"template <{declared}>\nusing {camel(name)} = typename {name}_instance<{used}>::type;\n")
    out.append("}  // namespace kernel\n\nnamespace spec {\n")
    for kernel in plain:
        out.append(f"inline {SE}MultiKernelLoaderSpec {kernel.name}() {{\n{spec_body(kernel, '  ')}}}\n")
    for name, group in templated.items():
        declared = ", ".join(f"{kind} {param}" for kind, param in group[0].template_params)
        used = ", ".join(param for _, param in group[0].template_params)
        out.append(f"template <{declared}>\n{SE}MultiKernelLoaderSpec {name}() {{\n"
                   f"  return kernel::{name}_instance<{used}>::spec();\n}}\n")
    out.append(f"}}  // namespace spec\n\n}}  // namespace {options.namespace}\n")
    return "".join(out)


def cpp_string(text):
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("inputs", nargs="+", help=".cl and .cu kernel files")
    parser.add_argument("-o", "--output", required=True)
    parser.add_argument("--namespace", default="gpucc", help="of the generated code (default: gpucc, as in the design)")
    parser.add_argument("--depfile", help="write a Makefile dependency file (for Meson and Ninja)")
    parser.add_argument("--clang-arg", action="append", default=[], help="extra libclang argument (-I, -D)")
    parser.add_argument("--cl-std", default="CL1.2", help="OpenCL C version the .cl files are parsed as")
    parser.add_argument("--opencl-options", default="", help="build options embedded in the OpenCL specs")
    parser.add_argument("--nvcc", default="nvcc")
    parser.add_argument("--nvcc-arg", action="append", default=[], help="extra nvcc argument (-arch=sm_80, -I)")
    parser.add_argument("--std", default="c++17", help="C++ standard of the .cu files (default: c++17)")
    parser.add_argument("--no-fatbin", action="store_true", help="embed PTX only (loaded by JIT, signature-checked)")
    options = parser.parse_args()
    try:
        header, depends = generate(options.inputs, options)
    except Error as e:
        print(e, file=sys.stderr)
        return 1
    with open(options.output, "w", encoding="utf-8") as f:
        f.write(header)
    if options.depfile:
        with open(options.depfile, "w", encoding="utf-8") as f:
            files = [p.replace(" ", "\\ ") for p in list(options.inputs) + sorted(depends) if not p.startswith(os.path.dirname(PRELUDE))]
            f.write(f"{options.output}: {' '.join(files)}\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
