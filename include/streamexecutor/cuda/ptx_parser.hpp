// Reads the `.entry NAME( .param ... )` lists out of PTX text, for the
// load-time signature check (signature.hpp). Only the parts of the grammar
// that declare kernel parameters are understood; everything else is skipped
// token by token. Input may be arbitrary bytes (it is fuzzed): every path
// either returns entries or an error Status, never reads out of bounds.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "streamexecutor/core/status.hpp"

namespace streamexecutor::cuda_detail {

struct PtxParam {
  std::string name;
  std::string type;  // ".u64", ".f32", ".b8" ...
  std::uint64_t element_size = 0;
  std::uint64_t size = 0;   // element_size, times the array length for `name[N]`
  std::uint64_t align = 0;  // from `.align N`, 0 when absent
  bool is_array = false;    // `.param .align 8 .b8 p[16]`: a struct passed by value
  bool is_ptr = false;      // `.ptr` attribute: the parameter is a pointer
};

struct PtxEntry {
  std::string name;
  std::vector<PtxParam> params;
  int line = 0;
};

// Size in bytes of a PTX fundamental type such as ".u32", or 0 when `type`
// is not one that a kernel parameter can have.
constexpr std::uint64_t PtxTypeSize(std::string_view type) {
  struct Entry {
    std::string_view name;
    std::uint64_t size;
  };
  constexpr Entry kTypes[] = {
      {".b8", 1},   {".s8", 1},  {".u8", 1},  {".b16", 2}, {".s16", 2},   {".u16", 2},   {".f16", 2},
      {".bf16", 2}, {".b32", 4}, {".s32", 4}, {".u32", 4}, {".f32", 4},   {".f16x2", 4}, {".bf16x2", 4},
      {".b64", 8},  {".s64", 8}, {".u64", 8}, {".f64", 8}, {".b128", 16},
  };
  for (const Entry& entry : kTypes) {
    if (entry.name == type) return entry.size;
  }
  return 0;
}

constexpr bool PtxTypeIsFloat(std::string_view type) { return type.size() > 1 && type[1] == 'f'; }

class PtxLexer {
 public:
  explicit PtxLexer(std::string_view text) : text_(text) {}

  // The next token, or an empty view at the end. Tokens are identifiers and
  // directives (".param", "%r1", "_Z3fooPf", "$L1"), numbers and single
  // punctuation characters; comments and string literals are skipped.
  std::string_view Next() {
    if (!SkipSpaceAndComments()) return {};
    if (pos_ >= text_.size()) return {};
    const std::size_t start = pos_;
    const char c = text_[pos_];
    if (IsWordChar(c) || c == '.' || c == '%' || c == '$') {
      ++pos_;
      while (pos_ < text_.size() && (IsWordChar(text_[pos_]) || text_[pos_] == '$' || text_[pos_] == '.')) ++pos_;
      // ".param" and "_param_0" are words, but a '.' only continues a word
      // that started as a directive or identifier, which is what PTX means.
      return text_.substr(start, pos_ - start);
    }
    ++pos_;
    return text_.substr(start, 1);
  }
  // A token without consuming it.
  std::string_view Peek() {
    const std::size_t pos = pos_;
    const int line = line_;
    const std::string_view token = Next();
    pos_ = pos;
    line_ = line;
    return token;
  }
  int line() const { return line_; }
  const std::string& error() const { return error_; }

 private:
  static constexpr bool IsWordChar(char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
  }

  bool SkipSpaceAndComments() {
    while (pos_ < text_.size()) {
      const char c = text_[pos_];
      if (c == '\n') {
        ++line_;
        ++pos_;
      } else if (c == ' ' || c == '\t' || c == '\r' || c == '\f' || c == '\v' || c == '\0') {
        ++pos_;
      } else if (c == '/' && pos_ + 1 < text_.size() && text_[pos_ + 1] == '/') {
        while (pos_ < text_.size() && text_[pos_] != '\n') ++pos_;
      } else if (c == '/' && pos_ + 1 < text_.size() && text_[pos_ + 1] == '*') {
        const std::size_t end = text_.find("*/", pos_ + 2);
        if (end == std::string_view::npos) return Fail("unterminated /* comment");
        for (std::size_t i = pos_; i < end; ++i) line_ += text_[i] == '\n';
        pos_ = end + 2;
      } else if (c == '"') {
        std::size_t i = pos_ + 1;
        while (i < text_.size() && text_[i] != '"' && text_[i] != '\n') i += text_[i] == '\\' ? 2 : 1;
        if (i >= text_.size() || text_[i] != '"') return Fail("unterminated string literal");
        pos_ = i + 1;
      } else {
        return true;
      }
    }
    return true;
  }
  bool Fail(std::string_view what) {
    if (error_.empty()) error_ = ::streamexecutor::detail::Format("line {}: {}", line_, what);
    pos_ = text_.size();
    return false;
  }

  std::string_view text_;
  std::size_t pos_ = 0;
  int line_ = 1;
  std::string error_;
};

namespace ptx_detail {

inline bool ParseNumber(std::string_view token, std::uint64_t& value) {
  if (token.empty() || token.size() > 19) return false;
  value = 0;
  for (char c : token) {
    if (c < '0' || c > '9') return false;
    value = value * 10 + static_cast<std::uint64_t>(c - '0');
  }
  return true;
}

inline std::string Shown(std::string_view token) {
  if (token.empty()) return "the end of the PTX";
  std::string shown;
  for (char c : token.substr(0, 40)) shown += (c >= 0x20 && c < 0x7f) ? c : '?';
  return "'" + shown + "'";
}

inline bool IsStateSpace(std::string_view token) {
  return token == ".global" || token == ".const" || token == ".local" || token == ".shared";
}

}  // namespace ptx_detail

// One `.param` declaration; the lexer is just past ".param".
inline Status ParsePtxParam(PtxLexer& lexer, std::string_view entry, std::size_t index, PtxParam& param) {
  using ptx_detail::Shown;
  auto error = [&](std::string_view expected, std::string_view found) {
    return MakeError(ErrorCode::kInvalidArgument, "PTX line {}: parameter {} of entry '{}': expected {}, found {}",
                     lexer.line(), index, entry, expected, Shown(found));
  };
  bool in_ptr_attributes = false;
  for (;;) {
    const std::string_view token = lexer.Next();
    if (token == ".align") {
      const std::string_view number = lexer.Next();
      std::uint64_t align = 0;
      if (!ptx_detail::ParseNumber(number, align) || align == 0 || (align & (align - 1)) != 0) {
        return error("a power-of-two alignment after .align", number);
      }
      // `.ptr .global .align 4` is the pointee's alignment, not the parameter's.
      if (!in_ptr_attributes) param.align = align;
    } else if (token == ".ptr") {
      param.is_ptr = in_ptr_attributes = true;
    } else if (in_ptr_attributes && ptx_detail::IsStateSpace(token)) {
      continue;
    } else if (!token.empty() && token[0] == '.' && param.type.empty()) {
      param.element_size = PtxTypeSize(token);
      if (param.element_size == 0) return error("a PTX parameter type (.u32, .f64, .b8 ...)", token);
      param.type = std::string(token);
    } else if (!token.empty() && token[0] != '.' && !param.type.empty() && param.name.empty() &&
               (token[0] == '_' || token[0] == '$' || token[0] == '%' || (token[0] >= 'a' && token[0] <= 'z') ||
                (token[0] >= 'A' && token[0] <= 'Z'))) {
      param.name = std::string(token);
      break;
    } else {
      return error(param.type.empty() ? "a parameter type" : "a parameter name", token);
    }
  }
  param.size = param.element_size;
  if (lexer.Peek() == "[") {
    lexer.Next();
    const std::string_view number = lexer.Next();
    std::uint64_t count = 0;
    if (!ptx_detail::ParseNumber(number, count) || count == 0 || count > (1u << 20)) {
      return error("an array length", number);
    }
    if (const std::string_view close = lexer.Next(); close != "]") return error("']'", close);
    param.is_array = true;
    param.size = param.element_size * count;
  }
  return Status();
}

// Every `.entry` of `ptx`, with its parameter list.
inline StatusOr<std::vector<PtxEntry>> ParsePtxEntries(std::string_view ptx) {
  using ptx_detail::Shown;
  std::vector<PtxEntry> entries;
  PtxLexer lexer(ptx);
  for (std::string_view token = lexer.Next(); !token.empty(); token = lexer.Next()) {
    if (token != ".entry") continue;
    PtxEntry entry;
    entry.line = lexer.line();
    const std::string_view name = lexer.Next();
    if (name.empty() || name[0] == '.' ||
        !(name[0] == '_' || name[0] == '$' || (name[0] >= 'a' && name[0] <= 'z') ||
          (name[0] >= 'A' && name[0] <= 'Z'))) {
      return MakeError(ErrorCode::kInvalidArgument, "PTX line {}: expected a kernel name after .entry, found {}",
                       lexer.line(), Shown(name));
    }
    entry.name = std::string(name);
    if (lexer.Peek() == "(") {
      lexer.Next();
      if (lexer.Peek() == ")") {
        lexer.Next();
      } else {
        for (;;) {
          if (const std::string_view param = lexer.Next(); param != ".param") {
            return MakeError(ErrorCode::kInvalidArgument,
                             "PTX line {}: entry '{}': expected .param for parameter {}, found {}", lexer.line(),
                             entry.name, entry.params.size(), Shown(param));
          }
          if (entry.params.size() >= 4096) {
            return MakeError(ErrorCode::kInvalidArgument, "PTX line {}: entry '{}' has more than 4096 parameters",
                             lexer.line(), entry.name);
          }
          PtxParam& param = entry.params.emplace_back();
          STREAMEXECUTOR_RETURN_IF_ERROR(ParsePtxParam(lexer, entry.name, entry.params.size() - 1, param));
          const std::string_view separator = lexer.Next();
          if (separator == ")") break;
          if (separator != ",") {
            return MakeError(ErrorCode::kInvalidArgument,
                             "PTX line {}: entry '{}': expected ',' or ')' after parameter {}, found {}", lexer.line(),
                             entry.name, entry.params.size() - 1, Shown(separator));
          }
        }
      }
    }
    entries.push_back(std::move(entry));
  }
  if (!lexer.error().empty()) {
    return MakeError(ErrorCode::kInvalidArgument, "malformed PTX: {}", lexer.error());
  }
  return entries;
}

}  // namespace streamexecutor::cuda_detail
