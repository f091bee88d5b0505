// Parameter types out of an Itanium-mangled kernel name (`_Z5saxpyfPKfPfj`).
// PTX gives only sizes (a float and an int are both .u32/.f32 of 4 bytes, a
// pointer is a .u64 like a long), the mangled name gives the C++ types, so a
// C++ kernel is checked against TypedKernel<...> element type by element type.
//
// Only what kernels use is decoded: builtin types, pointers, cv-qualifiers,
// class names (plain, nested and class templates), substitutions, and
// function templates (template arguments that are types or literals, the
// encoded return type, and template parameters `T_`, `T0_` in the
// parameters, so `scale<float>(T*, T, int)` reads as (float*, float, int)).
// Anything else (references, function types, packs, expressions) makes the
// decoder give up, and the check falls back to the PTX sizes.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace streamexecutor::cuda_detail {

struct CppType {
  std::string spelling;    // "const float*"
  int pointer_depth = 0;   // 1 for float*
  char builtin = 0;        // mangling code of the value (or pointee) type; 0 for classes
  std::string class_name;  // "test_kernels::Pair" for class types
};

struct BuiltinType {
  char code;
  std::string_view name;
  std::uint64_t size;
  char category;  // 's' signed integer, 'u' unsigned integer, 'f' floating point, 'b' bool, 'v' void
};

// LP64 (Linux x86-64/aarch64), the only data model CUDA supports on Linux.
inline constexpr BuiltinType kBuiltinTypes[] = {
    {'v', "void", 0, 'v'},
    {'b', "bool", 1, 'b'},
    {'c', "char", 1, 's'},
    {'a', "signed char", 1, 's'},
    {'h', "unsigned char", 1, 'u'},
    {'s', "short", 2, 's'},
    {'t', "unsigned short", 2, 'u'},
    {'i', "int", 4, 's'},
    {'j', "unsigned int", 4, 'u'},
    {'l', "long", 8, 's'},
    {'m', "unsigned long", 8, 'u'},
    {'x', "long long", 8, 's'},
    {'y', "unsigned long long", 8, 'u'},
    {'n', "__int128", 16, 's'},
    {'o', "unsigned __int128", 16, 'u'},
    {'f', "float", 4, 'f'},
    {'d', "double", 8, 'f'},
    {'e', "long double", 16, 'f'},
};

constexpr const BuiltinType* FindBuiltin(char code) {
  for (const BuiltinType& type : kBuiltinTypes) {
    if (type.code == code) return &type;
  }
  return nullptr;
}

// The builtin type that a compiler's spelling of a type names (GCC writes
// "long int" and "short unsigned int", Clang "long" and "unsigned short"),
// or null for anything else.
inline const BuiltinType* BuiltinFromSpelling(std::string_view spelling) {
  struct Alias {
    std::string_view spelling;
    char code;
  };
  static constexpr Alias kAliases[] = {
      {"bool", 'b'},
      {"char", 'c'},
      {"signed char", 'a'},
      {"unsigned char", 'h'},
      {"short", 's'},
      {"short int", 's'},
      {"unsigned short", 't'},
      {"short unsigned int", 't'},
      {"int", 'i'},
      {"unsigned int", 'j'},
      {"unsigned", 'j'},
      {"long", 'l'},
      {"long int", 'l'},
      {"unsigned long", 'm'},
      {"long unsigned int", 'm'},
      {"long long", 'x'},
      {"long long int", 'x'},
      {"unsigned long long", 'y'},
      {"long long unsigned int", 'y'},
      {"float", 'f'},
      {"double", 'd'},
      {"long double", 'e'},
      {"__int128", 'n'},
      {"unsigned __int128", 'o'},
  };
  for (const Alias& alias : kAliases) {
    if (alias.spelling == spelling) return FindBuiltin(alias.code);
  }
  return nullptr;
}

class ItaniumParamDecoder {
 public:
  explicit ItaniumParamDecoder(std::string_view mangled) : in_(mangled) {}

  // The parameter types of a mangled function name, or nullopt when the name
  // is not mangled or uses something this decoder does not cover.
  std::optional<std::vector<CppType>> Decode() {
    if (in_.substr(0, 2) != "_Z") return std::nullopt;
    pos_ = 2;
    std::string name;
    bool is_template = false;
    if (!ParseName(name, /*function=*/true, &is_template)) return std::nullopt;
    // A function template's name is followed by its return type (void for a kernel).
    if (is_template) {
      if (pos_ < in_.size() && in_[pos_] == 'v') {
        ++pos_;
      } else {
        CppType ignored;
        if (!ParseType(ignored, 0)) return std::nullopt;
      }
    }
    std::vector<CppType> params;
    if (pos_ < in_.size() && in_[pos_] == 'v' && pos_ + 1 == in_.size()) return params;  // f(void)
    while (pos_ < in_.size()) {
      // A clone suffix such as ".constprop.0" ends the encoding.
      if (in_[pos_] == '.') break;
      CppType type;
      if (!ParseType(type, 0) || params.size() >= 4096) return std::nullopt;
      params.push_back(std::move(type));
    }
    if (params.empty()) return std::nullopt;
    return params;
  }

 private:
  bool ParseSourceName(std::string& out) {
    std::uint64_t length = 0;
    const std::size_t start = pos_;
    while (pos_ < in_.size() && in_[pos_] >= '0' && in_[pos_] <= '9' && pos_ - start < 6) {
      length = length * 10 + static_cast<std::uint64_t>(in_[pos_++] - '0');
    }
    if (pos_ == start || length == 0 || length > in_.size() - pos_) return false;
    out = std::string(in_.substr(pos_, length));
    pos_ += length;
    return true;
  }

  // <name> ::= <source-name> [<template-args>]
  //          | N [<CV-qualifiers>] <prefix> <source-name> [<template-args>] E
  // Every prefix is a substitution candidate, and so is a template's name;
  // the whole name is one too, unless it names the function itself.
  // A function's own template arguments are kept for `T_` in its parameters.
  bool ParseName(std::string& out, bool function, bool* is_template) {
    std::string qualified;
    bool ends_in_template = false;
    // One component (a source name, then template arguments if any) added to `qualified`.
    const auto component = [&]() -> bool {
      std::string name;
      if (!ParseSourceName(name)) return false;
      qualified = qualified.empty() ? name : qualified + "::" + name;
      ends_in_template = pos_ < in_.size() && in_[pos_] == 'I';
      if (ends_in_template) {
        AddSubstitution(CppType{qualified, 0, 0, qualified});  // the template's name
        std::vector<CppType> args;
        if (!ParseTemplateArgs(args)) return false;
        qualified += "<" + JoinSpellings(args) + ">";
        if (function) template_args_ = std::move(args);
      }
      return true;
    };
    if (pos_ < in_.size() && in_[pos_] == 'N') {
      ++pos_;
      while (pos_ < in_.size() && (in_[pos_] == 'K' || in_[pos_] == 'V' || in_[pos_] == 'r')) ++pos_;
      bool pending = false;  // `qualified` is a prefix not yet recorded as a candidate
      while (pos_ < in_.size() && in_[pos_] != 'E') {
        if (pending) AddSubstitution(CppType{qualified, 0, 0, qualified});
        if (in_[pos_] == 'S' && qualified.empty()) {
          CppType prefix;
          if (!ParseSubstitution(prefix) || prefix.class_name.empty() || prefix.pointer_depth != 0) return false;
          qualified = prefix.class_name;  // already a candidate
          pending = false;
          continue;
        }
        if (!component()) return false;
        pending = true;
      }
      if (pos_ >= in_.size() || qualified.empty()) return false;
      ++pos_;  // 'E'
    } else if (!component()) {
      return false;
    }
    if (!function) AddSubstitution(CppType{qualified, 0, 0, qualified});
    if (is_template != nullptr) *is_template = ends_in_template;
    out = qualified;
    return true;
  }

  // <template-args> ::= I <template-arg>+ E, each a type or a literal
  // (L <type> <value> E); packs (J) and expressions (X) are not decoded.
  bool ParseTemplateArgs(std::vector<CppType>& args) {
    ++pos_;  // 'I'
    while (pos_ < in_.size() && in_[pos_] != 'E') {
      if (args.size() >= 64) return false;
      CppType arg;
      if (in_[pos_] == 'L') {
        const std::size_t start = ++pos_;
        while (pos_ < in_.size() && in_[pos_] != 'E') ++pos_;
        if (pos_ >= in_.size() || pos_ - start < 2) return false;
        arg.spelling = std::string(in_.substr(start + 1, pos_ - start - 1));  // the value, as mangled
        if (!arg.spelling.empty() && arg.spelling[0] == 'n') arg.spelling[0] = '-';
        ++pos_;  // 'E'
      } else if (!ParseType(arg, 1)) {
        return false;
      }
      args.push_back(std::move(arg));
    }
    if (pos_ >= in_.size() || args.empty()) return false;
    ++pos_;  // 'E'
    return true;
  }

  static std::string JoinSpellings(const std::vector<CppType>& types) {
    std::string out;
    for (const CppType& type : types) out += (out.empty() ? "" : ", ") + type.spelling;
    return out;
  }

  // <template-param> ::= T_ | T <number> _ : the function's template argument.
  bool ParseTemplateParam(CppType& out) {
    ++pos_;  // 'T'
    std::uint64_t index = 0;
    if (pos_ < in_.size() && in_[pos_] != '_') {
      const std::size_t start = pos_;
      while (pos_ < in_.size() && in_[pos_] >= '0' && in_[pos_] <= '9' && pos_ - start < 4) {
        index = index * 10 + static_cast<std::uint64_t>(in_[pos_++] - '0');
      }
      ++index;
    }
    if (pos_ >= in_.size() || in_[pos_] != '_' || index >= template_args_.size()) return false;
    ++pos_;
    out = template_args_[index];
    if (out.spelling.empty() || (out.builtin == 0 && out.class_name.empty())) return false;  // a literal
    AddSubstitution(out);
    return true;
  }

  bool ParseSubstitution(CppType& out) {
    ++pos_;  // 'S'
    std::uint64_t index = 0;
    if (pos_ < in_.size() && in_[pos_] == '_') {
      ++pos_;
    } else {
      std::uint64_t seq = 0;
      const std::size_t start = pos_;
      while (pos_ < in_.size() && in_[pos_] != '_' && pos_ - start < 6) {
        const char c = in_[pos_++];
        if (c >= '0' && c <= '9') {
          seq = seq * 36 + static_cast<std::uint64_t>(c - '0');
        } else if (c >= 'A' && c <= 'Z') {
          seq = seq * 36 + static_cast<std::uint64_t>(c - 'A' + 10);
        } else {
          return false;  // St, Sa, Ss ...: std:: abbreviations are not decoded
        }
      }
      if (pos_ >= in_.size() || pos_ == start) return false;
      ++pos_;
      index = seq + 1;
    }
    if (index >= substitutions_.size()) return false;
    out = substitutions_[index];
    return true;
  }

  bool ParseType(CppType& out, int depth) {
    if (pos_ >= in_.size() || depth > 32) return false;
    const char c = in_[pos_];
    if (const BuiltinType* builtin = FindBuiltin(c); builtin != nullptr && c != 'v') {
      ++pos_;
      out = CppType{std::string(builtin->name), 0, c, {}};
      return true;
    }
    if (c == 'P' || c == 'K' || c == 'V' || c == 'r') {
      ++pos_;
      CppType inner;
      if (pos_ < in_.size() && in_[pos_] == 'v' && c == 'P') {
        ++pos_;
        inner = CppType{"void", 0, 'v', {}};
      } else if (!ParseType(inner, depth + 1)) {
        return false;
      }
      out = inner;
      if (c == 'P') {
        out.spelling += "*";
        ++out.pointer_depth;
      } else if (c == 'K') {
        out.spelling = inner.pointer_depth ? inner.spelling + " const" : "const " + inner.spelling;
      } else if (c == 'V') {
        out.spelling = inner.pointer_depth ? inner.spelling + " volatile" : "volatile " + inner.spelling;
      } else {
        out.spelling += " __restrict__";
      }
      AddSubstitution(out);
      return true;
    }
    if (c == 'S') return ParseSubstitution(out);
    if (c == 'T') return ParseTemplateParam(out);
    if (c == 'N' || (c >= '1' && c <= '9')) {
      std::string name;
      if (!ParseName(name, /*function=*/false, nullptr)) return false;
      out = CppType{name, 0, 0, name};
      return true;
    }
    if (c == 'D' && pos_ + 1 < in_.size() && in_[pos_ + 1] == 'h') {
      pos_ += 2;
      out = CppType{"__half", 0, 0, "__half"};
      return true;
    }
    return false;
  }

  void AddSubstitution(const CppType& type) {
    if (substitutions_.size() < 4096) substitutions_.push_back(type);
  }

  std::string_view in_;
  std::size_t pos_ = 0;
  std::vector<CppType> substitutions_;
  std::vector<CppType> template_args_;  // the function template's, for T_
};

inline std::optional<std::vector<CppType>> DecodeMangledParams(std::string_view mangled) {
  return ItaniumParamDecoder(mangled).Decode();
}

// The source name of a mangled function ("saxpy" for "_Z5saxpyfPKfPfj"), for
// suggesting the right entry when a spec names a C++ kernel unmangled.
inline std::string MangledBaseName(std::string_view mangled) {
  if (mangled.substr(0, 2) != "_Z") return {};
  std::size_t pos = 2;
  if (pos < mangled.size() && mangled[pos] == 'N') return {};
  std::size_t length = 0;
  while (pos < mangled.size() && mangled[pos] >= '0' && mangled[pos] <= '9' && length < 100000) {
    length = length * 10 + static_cast<std::size_t>(mangled[pos++] - '0');
  }
  if (length == 0 || length > mangled.size() - pos) return {};
  return std::string(mangled.substr(pos, length));
}

}  // namespace streamexecutor::cuda_detail
