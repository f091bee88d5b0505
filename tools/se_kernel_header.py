#!/usr/bin/env python3
"""Generates a C++ header of typed kernels from OpenCL C (.cl), CUDA (.cu) and
GLSL compute shader (.comp) kernel files: per kernel, a streamexecutor
TypedKernel alias whose parameters come from the kernel's own signature (read
by libclang, python3-clang) or, for GLSL, from the SPIR-V module's interface,
and a function returning its MultiKernelLoaderSpec with the code embedded
(OpenCL source; PTX and fatbin from nvcc; SPIR-V from glslangValidator). See
docs/generator.md.

  se_kernel_header.py saxpy.cl [saxpy.cu saxpy.comp ...] -o saxpy.gpu.h [--namespace gpucc]

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
    ci = None  # GLSL needs no libclang: only .cl and .cu files ask for it

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
if ci is not None:
    K = ci.CursorKind
    T = ci.TypeKind
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
    if isinstance(cursor, str):  # GLSL's origins are FILE:LINE already
        return cursor
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


# ---- GLSL compute shaders (.comp) ---------------------------------------------
# GLSL has one `main`, so one .comp file is one kernel. glslangValidator renames
# the entry point to the kernel's name, and the parameter list is read back
# from the SPIR-V module by the rules the Vulkan backend's load-time check
# applies (the Vulkan backend's reflection.hpp and its documentation), so a
# generated alias always passes that check.

# `// se:kernel NAME` names a kernel whose file is named otherwise.
KERNEL_ANNOTATION = re.compile(r"^[ \t]*//[ \t]*se:kernel[ \t]+(\S*)[ \t]*$", re.M)
GLSLANG_MESSAGE = re.compile(r"^(ERROR|WARNING): (.+?):(\d+): (.*)$")

# From the SPIR-V specification, section 3.
SPIRV_MAGIC = 0x07230203
OP_NAME, OP_MEMBER_NAME, OP_ENTRY_POINT = 5, 6, 15
OP_TYPE_BOOL, OP_TYPE_INT, OP_TYPE_FLOAT, OP_TYPE_VECTOR, OP_TYPE_MATRIX = 20, 21, 22, 23, 24
OP_TYPE_ARRAY, OP_TYPE_RUNTIME_ARRAY, OP_TYPE_STRUCT, OP_TYPE_POINTER = 28, 29, 30, 32
OP_CONSTANT, OP_SPEC_CONSTANT, OP_VARIABLE, OP_DECORATE, OP_MEMBER_DECORATE = 43, 50, 59, 71, 72
DEC_SPEC_ID, DEC_BUFFER_BLOCK, DEC_ARRAY_STRIDE, DEC_BINDING, DEC_SET, DEC_OFFSET = 1, 3, 6, 33, 34, 35
SC_UNIFORM_CONSTANT, SC_UNIFORM, SC_WORKGROUP, SC_PUSH_CONSTANT, SC_STORAGE_BUFFER = 0, 2, 4, 9, 12
MODEL_GLCOMPUTE = 5
# Vulkan guarantees this much push-constant space on every device.
PUSH_CONSTANT_LIMIT = 128
# GLSL's spelling of a vector of each component type, for the twin's name.
VECTOR_PREFIX = {("float", 4): "vec", ("float", 8): "dvec", ("float", 2): "f16vec", ("int", 4): "ivec",
                 ("uint", 4): "uvec", ("int", 8): "i64vec", ("uint", 8): "u64vec", ("int", 2): "i16vec",
                 ("uint", 2): "u16vec", ("int", 1): "i8vec", ("uint", 1): "u8vec"}


def spirv_string(operands):
    """A literal string operand (the operands after it are ignored)."""
    data = b"".join(w.to_bytes(4, "little") for w in operands)
    end = data.find(b"\0")
    return data[:end if end >= 0 else len(data)].decode("utf-8", errors="replace")


class SpirvModule:
    """The few instructions that describe a compute shader's interface."""

    def __init__(self, data, path):
        if len(data) < 20 or len(data) % 4:
            raise Error(f"{path}: error: glslangValidator wrote {len(data)} bytes, not a SPIR-V module")
        words = [int.from_bytes(data[i:i + 4], "little") for i in range(0, len(data), 4)]
        if words[0] != SPIRV_MAGIC:
            raise Error(f"{path}: error: glslangValidator's output does not start with the SPIR-V magic number")
        self.words = words
        self.names, self.member_names = {}, {}
        self.decorations, self.member_decorations = {}, {}
        self.defs = {}  # result id -> (opcode, operands after the result id; constants keep their type first)
        self.variables = []  # (id, pointer type id, storage class)
        self.entry_points = []  # (execution model, name)
        at = 5
        while at < len(words):
            count, opcode = words[at] >> 16, words[at] & 0xffff
            if count == 0 or at + count > len(words):
                raise Error(f"{path}: error: glslangValidator's SPIR-V is truncated at word {at}")
            ops = words[at + 1:at + count]
            if opcode == OP_NAME:
                self.names[ops[0]] = spirv_string(ops[1:])
            elif opcode == OP_MEMBER_NAME:
                self.member_names[(ops[0], ops[1])] = spirv_string(ops[2:])
            elif opcode == OP_ENTRY_POINT:
                self.entry_points.append((ops[0], spirv_string(ops[2:])))
            elif opcode in (OP_TYPE_BOOL, OP_TYPE_INT, OP_TYPE_FLOAT, OP_TYPE_VECTOR, OP_TYPE_MATRIX, OP_TYPE_ARRAY,
                            OP_TYPE_RUNTIME_ARRAY, OP_TYPE_STRUCT, OP_TYPE_POINTER):
                self.defs[ops[0]] = (opcode, ops[1:])
            elif opcode in (OP_CONSTANT, OP_SPEC_CONSTANT):
                self.defs[ops[1]] = (opcode, [ops[0]] + ops[2:])
            elif opcode == OP_VARIABLE:
                self.defs[ops[1]] = (opcode, [ops[0]] + ops[2:])
                self.variables.append((ops[1], ops[0], ops[2]))
            elif opcode == OP_DECORATE:
                self.decorations.setdefault(ops[0], {})[ops[1]] = ops[2:]
            elif opcode == OP_MEMBER_DECORATE:
                self.member_decorations.setdefault((ops[0], ops[1]), {})[ops[2]] = ops[3:]
            at += count

    def opcode(self, type_id):
        return self.defs.get(type_id, (0, []))[0]

    def operands(self, type_id):
        return self.defs.get(type_id, (0, []))[1]

    def decoration(self, target, decoration, member=None):
        if member is None:
            table = self.decorations.get(target, {})
        else:
            table = self.member_decorations.get((target, member), {})
        value = table.get(decoration)
        return value[0] if value else None


class GlslMapper:
    """C++ spellings of a shader's interface types, and the twins of its vectors and structs."""

    def __init__(self, module, path, source):
        self.module, self.path = module, path
        self.lines = source.splitlines()
        self.structs = {}  # name -> (definition text, origin)

    def line_of(self, name):
        """SPIR-V without debug information has no lines: the first line naming the thing stands in."""
        if name:
            pattern = re.compile(rf"\b{re.escape(name)}\b")
            for number, text in enumerate(self.lines, 1):
                if pattern.search(text.split("//")[0]):
                    return f"{self.path}:{number}"
        return f"{self.path}:1"

    def error(self, name, message):
        return Error(f"{self.line_of(name)}: error: {message}")

    def scalar(self, type_id):
        """(C++ spelling, size, GLSL kind) of an int or float type, or None."""
        opcode, ops = self.module.opcode(type_id), self.module.operands(type_id)
        if opcode == OP_TYPE_INT and ops[0] in (8, 16, 32, 64):
            signed = ops[1] != 0
            return f"std::{'' if signed else 'u'}int{ops[0]}_t", ops[0] // 8, "int" if signed else "uint"
        if opcode == OP_TYPE_FLOAT and ops[0] in (16, 32, 64):
            # C++20 has no 16-bit float: a float16_t travels as its bits, which the Vulkan check accepts.
            return {16: "std::uint16_t", 32: "float", 64: "double"}[ops[0]], ops[0] // 8, "float"
        return None

    def value(self, type_id, name, where_used):
        """(C++ spelling, size, alignment) of a type in a buffer, push-constant block or shared array.
        `where_used` is "buffer", "push" or "shared": layouts differ among them."""
        module = self.module
        opcode, ops = module.opcode(type_id), module.operands(type_id)
        found = self.scalar(type_id)
        if found:
            return found[0], found[1], found[1]
        if opcode == OP_TYPE_BOOL:
            raise self.error(name, f"'{name}' is a bool, which has no defined size in memory: use uint "
                             "(std::uint32_t) instead")
        if opcode == OP_TYPE_VECTOR:
            component = self.scalar(ops[0])
            lanes = ops[1]
            if lanes == 3 and where_used != "buffer":
                raise self.error(name, f"'{name}' is a 3-component vector, whose {3 * component[1]} bytes no C++ "
                                 "twin has (the twin of a 3-vector is padded to 4 lanes, as in a buffer's array): "
                                 "use a 4-component vector or three scalars")
            twin = f"{VECTOR_PREFIX[(component[2], component[1])]}{lanes}"
            # std430's alignment, which pads a 3-vector to 4 lanes as an array element.
            align = component[1] * (2 if lanes == 2 else 4)
            size = (lanes * component[1] + align - 1) // align * align
            body = f"struct alignas({align}) {twin} {{\n  {component[0]} s[{lanes}];\n}};\n"
            return self.add_struct(twin, body, align, size, [], name), size, align
        if opcode == OP_TYPE_STRUCT:
            if where_used == "shared":
                raise self.error(name, f"'{name}' holds a struct, whose layout in shared memory is the device's: "
                                 "use an array of scalars or vectors")
            return self.struct(type_id, name, where_used)
        what = {OP_TYPE_MATRIX: "a matrix", OP_TYPE_ARRAY: "an array", OP_TYPE_RUNTIME_ARRAY: "an array"}
        raise self.error(name, f"'{name}' is {what.get(opcode, 'of an opaque type')}, which has no C++ counterpart "
                         "in a generated header")

    def struct(self, type_id, name, where_used):
        module = self.module
        twin = module.names.get(type_id, "")
        if not twin.isidentifier():
            raise self.error(name, f"'{name}' has an unnamed struct type")
        fields, offsets, cursor, align = [], [], 0, 1
        for index, member in enumerate(module.operands(type_id)):
            field = module.member_names.get((type_id, index)) or f"m{index}"
            offset = module.decoration(type_id, DEC_OFFSET, index)
            suffix = ""
            if module.opcode(member) == OP_TYPE_ARRAY:
                element, length = module.operands(member)
                if module.opcode(length) != OP_CONSTANT:
                    raise self.error(field, f"field '{field}' of '{twin}' is an array of a specialization-constant "
                                     "length, which a C++ struct cannot mirror")
                spelling, size, field_align = self.value(element, field, "buffer")
                stride = module.decoration(member, DEC_ARRAY_STRIDE)
                if stride != size:
                    raise self.error(field, f"field '{field}' of '{twin}' is an array whose elements are {stride} "
                                     f"bytes apart, but {spelling} is {size} bytes")
                count = module.operands(length)[1]
                suffix, size = f"[{count}]", size * count
            else:
                spelling, size, field_align = self.value(member, field, "buffer")
            natural = (cursor + field_align - 1) // field_align * field_align
            if offset is None or offset < natural or offset % field_align:
                raise self.error(field, f"field '{field}' of '{twin}' is at offset {offset} of the shader's layout, "
                                 f"where a C++ struct cannot put a {spelling} (it would be at {natural})")
            if offset > natural:
                fields.append(f"  std::byte padding{len(fields)}_[{offset - cursor}];\n")
            fields.append(f"  {spelling} {field}{suffix};\n")
            offsets.append((field, offset))
            cursor, align = offset + size, max(align, field_align)
        if not fields:
            raise self.error(twin, f"struct '{twin}' has no fields")
        size = (cursor + align - 1) // align * align
        if where_used == "push" and size != cursor:
            # The Vulkan check compares the member's size, which has no padding at the end.
            raise self.error(name, f"push constant '{name}' is a struct of {cursor} bytes, which a C++ struct "
                             f"pads to {size}: pass its fields as push constants of their own")
        body = f"struct alignas({align}) {twin} {{\n{''.join(fields)}}};\n"
        return self.add_struct(twin, body, align, size, offsets, name), size, align

    def add_struct(self, twin, body, align, size, offsets, name):
        checks = [f"static_assert(sizeof({twin}) == {size} && alignof({twin}) == {align}, "
                  f"\"{twin}: layout differs from the shader's\");\n"]
        checks += [f"static_assert(offsetof({twin}, {field}) == {offset});\n" for field, offset in offsets]
        text = body + "".join(checks)
        if twin in self.structs and self.structs[twin][0] != text:
            raise self.error(name, f"struct '{twin}' has two layouts in this shader")
        self.structs.setdefault(twin, (text, self.line_of(twin if offsets else name)))
        return twin


def glsl_kernel_name(path, source):
    """The kernel's name, and where it comes from (FILE:LINE)."""
    found = KERNEL_ANNOTATION.search(source)
    if found:
        name, origin = found.group(1), f"{path}:{source.count(chr(10), 0, found.start()) + 1}"
        if not name.isidentifier():
            raise Error(f"{origin}: error: '// se:kernel {name}': the kernel name must be an identifier")
        return name, origin
    name = os.path.basename(path).split(".")[0]
    if not name.isidentifier():
        raise Error(f"{path}:1: error: the kernel's name would be the file's, '{name}', which is not an "
                    "identifier: name it with a '// se:kernel NAME' line")
    return name, f"{path}:1"


def glslang(path, name, options, scratch):
    """The SPIR-V words of the shader, and the files it includes."""
    if not shutil.which(options.glslang):
        raise Error(f"{path}: error: glslangValidator ('{options.glslang}') was not found; it compiles .comp files")
    out, depfile = os.path.join(scratch, "k.spv"), os.path.join(scratch, "k.d")
    command = [options.glslang, "-V", "--target-env", options.target_env, "-S", "comp", "-e", name,
               "--source-entrypoint", "main", "--depfile", depfile] + options.glslang_arg + ["-o", out, path]
    result = subprocess.run(command, capture_output=True, text=True)
    messages = []
    for text in (result.stdout + result.stderr).splitlines():
        # glslang says ERROR: FILE:LINE: ...; build tools and editors look for FILE:LINE: error: ...
        found = GLSLANG_MESSAGE.match(text)
        if found:
            messages.append(f"{found.group(2)}:{found.group(3)}: {found.group(1).lower()}: {found.group(4)}")
        elif text.strip() and text.strip() != path and result.returncode != 0:
            messages.append(text)
    if result.returncode != 0 or not os.path.exists(out):
        raise Error("\n".join(messages) + f"\n{path}: glslangValidator failed; no header generated")
    for message in messages:
        print(message, file=sys.stderr)
    with open(out, "rb") as f:
        words = f.read()
    depends = []
    if os.path.exists(depfile):
        with open(depfile, encoding="utf-8") as f:
            text = f.read().replace("\\\n", " ")
        depends = [p.replace("\\ ", " ") for p in re.split(r"(?<!\\) ", text.split(": ", 1)[-1].strip()) if p]
    return words, depends


def glsl_kernel(path, options, scratch):
    with open(path, encoding="utf-8") as f:
        source = f.read()
    name, origin = glsl_kernel_name(path, source)
    data, depends = glslang(path, name, options, scratch)
    module = SpirvModule(data, path)
    mapper = GlslMapper(module, path, source)
    if (MODEL_GLCOMPUTE, name) not in module.entry_points:
        raise Error(f"{path}: error: glslangValidator's module has no compute entry point '{name}'")
    buffers, push, shared = [], [], []  # (position hint, name, C++ parameter)
    push_bytes = 0
    for variable, pointer, storage in module.variables:
        pointee = module.operands(pointer)[1]
        block = pointee
        while module.opcode(block) in (OP_TYPE_ARRAY, OP_TYPE_RUNTIME_ARRAY):
            block = module.operands(block)[0]
        label = module.names.get(variable) or module.names.get(block, "")
        is_buffer = storage == SC_STORAGE_BUFFER or (
            storage == SC_UNIFORM and module.decoration(block, DEC_BUFFER_BLOCK) is not None)
        if is_buffer or storage in (SC_UNIFORM, SC_UNIFORM_CONSTANT):
            binding = module.decoration(variable, DEC_BINDING) or 0
            descriptor_set = module.decoration(variable, DEC_SET) or 0
            if not is_buffer:
                what = "a uniform buffer" if storage == SC_UNIFORM else "an image or sampler"
                raise mapper.error(label, f"'{label}' (binding {binding}) is {what}: kernels take storage buffers "
                                   "(layout(set = 0, binding = N) buffer Name { T data[]; };)")
            if descriptor_set != 0:
                raise mapper.error(label, f"buffer '{label}' is in descriptor set {descriptor_set}: kernels take "
                                   "their buffers in set 0 only")
            if block != pointee:
                raise mapper.error(label, f"buffer '{label}' is an array of buffers: each DeviceMemory parameter is "
                                   "one buffer")
            members = module.operands(block)
            array = members[0] if len(members) == 1 else None
            if array is None or module.opcode(array) not in (OP_TYPE_ARRAY, OP_TYPE_RUNTIME_ARRAY):
                raise mapper.error(label, f"buffer '{label}' holds {len(members)} member(s), not one array: a "
                                   "DeviceMemory<T> parameter is a block holding one array of T")
            element = module.operands(array)[0]
            spelling, size, _ = mapper.value(element, label, "buffer")
            stride = module.decoration(array, DEC_ARRAY_STRIDE)
            if stride != size:
                raise mapper.error(label, f"buffer '{label}' has elements {stride} bytes apart, but {spelling} is "
                                   f"{size} bytes")
            buffers.append((binding, label, f"{SE}DeviceMemory<{spelling}>*"))
        elif storage == SC_PUSH_CONSTANT:
            for index, member in enumerate(module.operands(pointee)):
                member_name = module.member_names.get((pointee, index), f"member {index}")
                spelling, size, _ = mapper.value(member, member_name, "push")
                push.append((None, member_name, spelling))
                push_bytes = max(push_bytes, (module.decoration(pointee, DEC_OFFSET, index) or 0) + size)
            if push_bytes > PUSH_CONSTANT_LIMIT:
                raise mapper.error(label, f"the push-constant block '{label}' is {push_bytes} bytes, more than the "
                                   f"{PUSH_CONSTANT_LIMIT} Vulkan guarantees: pass large values in a buffer")
        elif storage == SC_WORKGROUP and module.opcode(pointee) == OP_TYPE_ARRAY:
            element, length = module.operands(pointee)
            constant_id = module.decoration(length, DEC_SPEC_ID)
            if module.opcode(length) != OP_SPEC_CONSTANT or constant_id is None:
                continue  # a fixed-size shared array is the shader's own, not a parameter
            spelling, _, _ = mapper.value(element, label, "shared")
            other = next((n for c, n, _ in shared if c == constant_id), None)
            if other is not None:
                raise mapper.error(label, f"shared arrays '{label}' and '{other}' are both sized by constant_id "
                                   f"{constant_id}: each needs a constant of its own")
            shared.append((constant_id, label, f"{SE}SharedDeviceMemory<{spelling}>"))
    shared.sort()
    kernel = Kernel(name, glsl_params(mapper, buffers, push, shared), origin)
    return kernel, mapper, module.words, depends


def glsl_params(mapper, buffers, push, shared):
    """The TypedKernel's parameters in the order the Vulkan backend reads an
    untyped kernel's (ReadParams): each buffer at the position its binding
    names, each shared array at its constant id, the push constants filling the
    other positions in order. Where those positions collide (a shader whose
    bindings count its buffers 0, 1, 2, ... and whose shared arrays' constants
    do too), the buffers come first in binding order, then the push constants,
    then the shared arrays by constant id: the other form the check accepts."""
    count = len(buffers) + len(push) + len(shared)
    slots = [None] * count
    for position, _, param in buffers + shared:
        if position >= count or slots[position] is not None:
            break
        slots[position] = param
    else:
        rest = iter(param for _, _, param in push)
        return [slot if slot is not None else next(rest) for slot in slots]
    ordered = sorted(buffers)
    for index, (binding, label, _) in enumerate(ordered):
        if binding != index:
            raise mapper.error(label, f"buffer '{label}' is at binding {binding}: bindings are either 0, 1, 2, ... "
                               "in the order of the buffers, or each buffer's position in the parameter list (where "
                               "the push constants fill the positions left)")
    return [param for _, _, param in ordered] + [param for _, _, param in push] + [param for _, _, param in shared]


def spirv_only(inputs, options):
    """The SPIR-V bytes of the one .comp input, and its includes."""
    if len(inputs) != 1 or os.path.splitext(inputs[0])[1] != ".comp":
        raise Error(f"{', '.join(inputs)}: error: --spirv compiles exactly one .comp file")
    path = inputs[0]
    with open(path, encoding="utf-8") as f:
        name, _ = glsl_kernel_name(path, f.read())
    with tempfile.TemporaryDirectory() as scratch:
        words, depends = glslang(path, name, options, scratch)
    return words, [p for p in depends if os.path.abspath(p) != os.path.abspath(path)]


def spirv_array(name, words):
    rows = [", ".join(f"0x{w:08x}u" for w in words[i:i + 8]) for i in range(0, len(words), 8)]
    body = ",\n    ".join(rows)
    return f"inline constexpr std::uint32_t {name}[] = {{\n    {body}}};\n"


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
        if extension in (".cl", ".cu") and ci is None:
            raise Error(f"{path}: error: libclang's Python bindings are missing; they read .cl and .cu files "
                        "(Debian: apt-get install python3-clang)")
        tu = None
        if extension == ".comp":
            with tempfile.TemporaryDirectory() as scratch:
                kernel, mapper, words, included = glsl_kernel(path, options, scratch)
            variable = identifier(path, "spirv")
            code.append(spirv_array(variable, words))
            kernel.code.append(("AddSpirvInMemory", variable, kernel.name, None))
            found = [kernel]
            depends.update(p for p in included if os.path.abspath(p) != os.path.abspath(path))
        elif extension == ".cl":
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
            raise Error(f"{path}: error: unknown kind of kernel file (expected .cl, .cu or .comp)")
        if tu is not None:
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
                    hint = ""
                    if isinstance(kernel.origin, str) or isinstance(other.origin, str):
                        hint = ("; a shader's parameter order comes from its bindings: bind each buffer at its "
                                "parameter's position (docs/generator.md)")
                    raise Error(f"{where(kernel.origin)}: error: kernel '{kernel.name}' takes ({', '.join(kernel.params)})"
                                f" but in {where(other.origin)} it takes ({', '.join(other.params)}){hint}")
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
        out.append("// C++ twins of the structs (and vectors) the kernels take, checked against the kernels' layout.\n")
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
    parser.add_argument("inputs", nargs="+", help=".cl, .cu and .comp kernel files")
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
    parser.add_argument("--glslang", default="glslangValidator", help="compiles the .comp files")
    parser.add_argument("--glslang-arg", action="append", default=[], help="extra glslangValidator argument (-I, -D)")
    parser.add_argument("--target-env", default="vulkan1.2", help="of the .comp files' SPIR-V (default: vulkan1.2, "
                        "what the Vulkan backend needs)")
    parser.add_argument("--spirv", action="store_true", help="write one .comp file's SPIR-V module instead of a "
                        "header, its entry point named as in a header (for AddSpirvOnDisk)")
    options = parser.parse_args()
    try:
        if options.spirv:
            output, depends = spirv_only(options.inputs, options)
        else:
            header, depends = generate(options.inputs, options)
            output = header.encode("utf-8")
    except Error as e:
        print(e, file=sys.stderr)
        return 1
    with open(options.output, "wb") as f:
        f.write(output)
    if options.depfile:
        with open(options.depfile, "w", encoding="utf-8") as f:
            files = [p.replace(" ", "\\ ") for p in list(options.inputs) + sorted(depends) if not p.startswith(os.path.dirname(PRELUDE))]
            f.write(f"{options.output}: {' '.join(files)}\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
