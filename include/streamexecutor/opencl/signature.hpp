// The load-time signature check: after clCreateKernel, the TypedKernel's
// declared parameters are compared with what the OpenCL kernel really takes
// (clGetKernelArgInfo, available because every program is built with
// -cl-kernel-arg-info). See docs/opencl.md for the rules and an example.
#pragma once

#include <array>
#include <cctype>
#include <string>
#include <string_view>

#include "streamexecutor/core/backend.hpp"
#include "streamexecutor/detail/separate_compilation.hpp"
#include "streamexecutor/opencl/errors.hpp"

namespace streamexecutor::opencl_detail {

enum class Arith { kUnknown, kVoid, kSigned, kUnsigned, kChar, kFloat, kBool };

struct TypeClass {
  Arith kind = Arith::kUnknown;
  std::size_t size = 0;  // 0: not known from the name
  int lanes = 1;         // OpenCL vector width (3-vectors occupy 4 lanes)
  std::string_view cpp;  // suggested C++ element type, for hints
};

constexpr std::string_view Describe(Arith kind) {
  switch (kind) {
    case Arith::kSigned: return "signed integer";
    case Arith::kUnsigned: return "unsigned integer";
    case Arith::kChar: return "character";
    case Arith::kFloat: return "floating-point type";
    case Arith::kBool: return "boolean";
    case Arith::kVoid: return "void";
    default: return "type";
  }
}

// C++ element types by the name the compiler gives them (GCC and Clang
// spellings). Anything else (structs, enums, std::array) is kUnknown and is
// checked by size only.
#if STREAMEXECUTOR_DEFINE_OUT_OF_LINE
STREAMEXECUTOR_DECL TypeClass ClassifyCpp(std::string_view name, std::size_t size) {
  struct Entry {
    std::string_view name;
    Arith kind;
  };
  static constexpr std::array<Entry, 22> kTable{{
      {"float", Arith::kFloat},
      {"double", Arith::kFloat},
      {"_Float16", Arith::kFloat},
      {"__fp16", Arith::kFloat},
      {"char", Arith::kChar},
      {"signed char", Arith::kSigned},
      {"unsigned char", Arith::kUnsigned},
      {"short int", Arith::kSigned},
      {"short", Arith::kSigned},
      {"short unsigned int", Arith::kUnsigned},
      {"unsigned short", Arith::kUnsigned},
      {"int", Arith::kSigned},
      {"unsigned int", Arith::kUnsigned},
      {"long int", Arith::kSigned},
      {"long", Arith::kSigned},
      {"long unsigned int", Arith::kUnsigned},
      {"unsigned long", Arith::kUnsigned},
      {"long long int", Arith::kSigned},
      {"long long", Arith::kSigned},
      {"long long unsigned int", Arith::kUnsigned},
      {"unsigned long long", Arith::kUnsigned},
      {"bool", Arith::kBool},
  }};
  for (const Entry& entry : kTable) {
    if (entry.name == name) return TypeClass{entry.kind, size, 1, {}};
  }
  return TypeClass{Arith::kUnknown, size, 1, {}};
}
#else
STREAMEXECUTOR_DECL TypeClass ClassifyCpp(std::string_view name, std::size_t size);
#endif

// OpenCL C type names as clGetKernelArgInfo reports them ("float", "uint4"),
// without the pointer star. Typedefs and structs are kUnknown with size 0.
#if STREAMEXECUTOR_DEFINE_OUT_OF_LINE
STREAMEXECUTOR_DECL TypeClass ClassifyOpenCL(std::string_view name) {
  struct Entry {
    std::string_view name;
    Arith kind;
    std::size_t size;
    std::string_view cpp;
  };
  static constexpr std::array<Entry, 16> kTable{{
      {"char", Arith::kSigned, 1, "std::int8_t"},
      {"uchar", Arith::kUnsigned, 1, "std::uint8_t"},
      {"unsigned char", Arith::kUnsigned, 1, "std::uint8_t"},
      {"short", Arith::kSigned, 2, "std::int16_t"},
      {"ushort", Arith::kUnsigned, 2, "std::uint16_t"},
      {"unsigned short", Arith::kUnsigned, 2, "std::uint16_t"},
      {"int", Arith::kSigned, 4, "int"},
      {"uint", Arith::kUnsigned, 4, "std::uint32_t"},
      {"unsigned int", Arith::kUnsigned, 4, "std::uint32_t"},
      {"long", Arith::kSigned, 8, "std::int64_t"},
      {"ulong", Arith::kUnsigned, 8, "std::uint64_t"},
      {"unsigned long", Arith::kUnsigned, 8, "std::uint64_t"},
      {"float", Arith::kFloat, 4, "float"},
      {"double", Arith::kFloat, 8, "double"},
      {"half", Arith::kFloat, 2, "_Float16"},
      {"bool", Arith::kBool, 1, "bool"},
  }};
  if (name == "void") return TypeClass{Arith::kVoid, 0, 1, "any element type"};
  // A vector type is a scalar name followed by its width: float4, uchar16.
  std::size_t digits = name.size();
  while (digits > 0 && std::isdigit(static_cast<unsigned char>(name[digits - 1]))) --digits;
  const std::string_view base = name.substr(0, digits);
  int lanes = 1;
  if (digits != name.size()) {
    const std::string_view width = name.substr(digits);
    if (width == "2")
      lanes = 2;
    else if (width == "3" || width == "4")
      lanes = 4;
    else if (width == "8")
      lanes = 8;
    else if (width == "16")
      lanes = 16;
    else
      return TypeClass{};
  }
  for (const Entry& entry : kTable) {
    if (entry.name == base) {
      return TypeClass{entry.kind, entry.size * static_cast<std::size_t>(lanes), lanes,
                       lanes == 1 ? entry.cpp : std::string_view("a struct of the same size (e.g. cl_float4)")};
    }
  }
  return TypeClass{};
}
#else
STREAMEXECUTOR_DECL TypeClass ClassifyOpenCL(std::string_view name);
#endif

// Empty when `declared` (a C++ element or scalar type) can stand for `actual`
// (an OpenCL C type); otherwise why not.
#if STREAMEXECUTOR_DEFINE_OUT_OF_LINE
STREAMEXECUTOR_DECL std::string ElementMismatch(const KernelParamInfo& declared, std::string_view actual_name) {
  const TypeClass cl = ClassifyOpenCL(actual_name);
  const TypeClass cpp = ClassifyCpp(declared.value_type, declared.value_size);
  if (cl.kind == Arith::kVoid) return {};
  if (cl.size == 0) return {};  // a typedef or struct: its layout is not in the arg info
  auto sized = [](const TypeClass& t, std::string_view name) {
    return ::streamexecutor::detail::Format("{} is a {}-byte {}", name, t.size, Describe(t.kind));
  };
  if (cl.lanes > 1 || cpp.kind == Arith::kUnknown) {
    // Vectors and user-defined types: only the layout can be compared.
    if (cpp.kind != Arith::kUnknown || cpp.size != cl.size) {
      return ::streamexecutor::detail::Format("{}, OpenCL {} is a {}-byte vector", sized(cpp, declared.value_type),
                                              actual_name, cl.size);
    }
    return {};
  }
  bool same_kind = cpp.kind == cl.kind;
  if (cpp.kind == Arith::kChar) same_kind = cl.size == 1 && cl.kind != Arith::kBool;  // char's sign is the ABI's
  if (actual_name == "half" && cpp.kind == Arith::kUnsigned) same_kind = true;        // half carried as raw bits
  if (same_kind && cpp.size == cl.size) return {};
  return ::streamexecutor::detail::Format("{}, OpenCL {}", sized(cpp, declared.value_type), sized(cl, actual_name));
}
#else
STREAMEXECUTOR_DECL std::string ElementMismatch(const KernelParamInfo& declared, std::string_view actual_name);
#endif

inline std::string_view AddressSpace(cl_kernel_arg_address_qualifier q) {
  switch (q) {
    case CL_KERNEL_ARG_ADDRESS_GLOBAL: return "__global";
    case CL_KERNEL_ARG_ADDRESS_CONSTANT: return "__constant";
    case CL_KERNEL_ARG_ADDRESS_LOCAL: return "__local";
    default: return "";
  }
}

struct RealArg {
  cl_kernel_arg_address_qualifier address = CL_KERNEL_ARG_ADDRESS_PRIVATE;
  std::string type;  // as reported, e.g. "float*"
  std::string base;  // without the star: "float"
  bool pointer = false;
  std::string spelled;  // "__global const float*"
  std::string name;     // the parameter's name in the source, if reported
};

inline std::string Trim(std::string_view text) {
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.front()))) text.remove_prefix(1);
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.back()))) text.remove_suffix(1);
  return std::string(text);
}

#if STREAMEXECUTOR_DEFINE_OUT_OF_LINE
STREAMEXECUTOR_DECL Status ReadArg(cl_kernel kernel, cl_uint index, RealArg& arg) {
  auto getter = [index](cl_kernel k, cl_kernel_arg_info param, std::size_t size, void* value, std::size_t* ret) {
    return clGetKernelArgInfo(k, index, param, size, value, ret);
  };
  arg.address = Info<cl_kernel_arg_address_qualifier>(getter, kernel, CL_KERNEL_ARG_ADDRESS_QUALIFIER);
  std::size_t size = 0;
  const cl_int error = clGetKernelArgInfo(kernel, index, CL_KERNEL_ARG_TYPE_NAME, 0, nullptr, &size);
  if (error != CL_SUCCESS) {
    return ClError("clGetKernelArgInfo(CL_KERNEL_ARG_TYPE_NAME)", error,
                   "for parameter {}: the program carries no argument info (binaries built without "
                   "-cl-kernel-arg-info cannot be checked)",
                   index);
  }
  arg.type = InfoString(getter, kernel, CL_KERNEL_ARG_TYPE_NAME);
  arg.name = InfoString(getter, kernel, CL_KERNEL_ARG_NAME);
  const auto qualifier = Info<cl_kernel_arg_type_qualifier>(getter, kernel, CL_KERNEL_ARG_TYPE_QUALIFIER);
  std::string_view type = arg.type;
  arg.pointer = !type.empty() && type.back() == '*';
  if (arg.pointer) type.remove_suffix(1);
  arg.base = Trim(type);
  std::string spelled(AddressSpace(arg.address));
  auto word = [&](std::string_view w) {
    if (!spelled.empty()) spelled += ' ';
    spelled += w;
  };
  if (arg.pointer && (qualifier & CL_KERNEL_ARG_TYPE_CONST)) word("const");
  if (qualifier & CL_KERNEL_ARG_TYPE_VOLATILE) word("volatile");
  word(arg.type);
  arg.spelled = std::move(spelled);
  return Status();
}
#else
STREAMEXECUTOR_DECL Status ReadArg(cl_kernel kernel, cl_uint index, RealArg& arg);
#endif

#if STREAMEXECUTOR_DEFINE_OUT_OF_LINE
STREAMEXECUTOR_DECL std::string Suggest(const RealArg& arg) {
  const TypeClass cl = ClassifyOpenCL(arg.base);
  const std::string element =
      cl.lanes == 1 && !cl.cpp.empty() && cl.kind != Arith::kVoid ? std::string(cl.cpp) : std::string("T");
  if (arg.pointer && arg.address == CL_KERNEL_ARG_ADDRESS_LOCAL) {
    return ::streamexecutor::detail::Format("streamexecutor::SharedDeviceMemory<{}>", element);
  }
  if (arg.pointer) return ::streamexecutor::detail::Format("streamexecutor::DeviceMemory<{}>*", element);
  return element;
}
#else
STREAMEXECUTOR_DECL std::string Suggest(const RealArg& arg);
#endif

#if STREAMEXECUTOR_DEFINE_OUT_OF_LINE
STREAMEXECUTOR_DECL Status CheckSignature(cl_kernel kernel, std::string_view kernel_name, std::string_view device,
                                          std::span<const KernelParamInfo> signature) {
  const auto count = Info<cl_uint>(clGetKernelInfo, kernel, CL_KERNEL_NUM_ARGS);
  std::vector<RealArg> real(count);
  for (cl_uint i = 0; i < count; ++i) {
    if (Status s = ReadArg(kernel, i, real[i]); !s.ok()) {
      return Status(s.code(), ::streamexecutor::detail::Format("GetKernel on {}: kernel '{}': {}", device, kernel_name,
                                                               s.message()));
    }
  }
  if (count != signature.size()) {
    std::string actual, declared;
    for (const RealArg& arg : real) {
      actual += ::streamexecutor::detail::Format("{}{}{}{}", actual.empty() ? "" : ", ", arg.spelled,
                                                 arg.name.empty() ? "" : " ", arg.name);
    }
    for (const KernelParamInfo& param : signature) {
      declared += ::streamexecutor::detail::Format("{}{}", declared.empty() ? "" : ", ", param.declared_type);
    }
    return MakeError(ErrorCode::kInvalidArgument,
                     "GetKernel on {}: kernel '{}' takes {} parameter(s) ({}) but the TypedKernel declares {} ({})",
                     device, kernel_name, count, actual, signature.size(), declared);
  }
  for (cl_uint i = 0; i < count; ++i) {
    const KernelParamInfo& param = signature[i];
    const RealArg& arg = real[i];
    const bool local = arg.pointer && arg.address == CL_KERNEL_ARG_ADDRESS_LOCAL;
    const bool global = arg.pointer && !local;
    std::string why;
    switch (param.kind) {
      case KernelParamKind::kDevicePointer:
        if (!global)
          why = local ? "__local memory is passed as streamexecutor::SharedDeviceMemory<T>"
                      : "it is a value, not a pointer";
        break;
      case KernelParamKind::kSharedMemory:
        if (!local)
          why = global ? "it points to global memory: pass it as streamexecutor::DeviceMemory<T>*"
                       : "it is a value, not __local memory";
        break;
      case KernelParamKind::kScalar:
        if (arg.pointer) why = "it is a pointer, not a value";
        break;
    }
    if (why.empty()) why = ElementMismatch(param, arg.base);
    if (!why.empty()) {
      return MakeError(ErrorCode::kInvalidArgument,
                       "GetKernel on {}: kernel '{}' parameter {}{}: TypedKernel declares {} but the kernel takes {} "
                       "({}); declare it as {}",
                       device, kernel_name, i,
                       arg.name.empty() ? "" : ::streamexecutor::detail::Format(" ('{}')", arg.name),
                       param.declared_type, arg.spelled, why, Suggest(arg));
    }
  }
  return Status();
}
#else
STREAMEXECUTOR_DECL Status CheckSignature(cl_kernel kernel, std::string_view kernel_name, std::string_view device,
                                          std::span<const KernelParamInfo> signature);
#endif

}  // namespace streamexecutor::opencl_detail
