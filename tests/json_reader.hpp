// A small JSON reader for tests that read what the library wrote (the
// Chrome trace-event files of core/trace.hpp): the whole grammar of RFC 8259,
// numbers as double, \u escapes to UTF-8 (surrogate pairs included), objects
// keeping their members in file order. A malformed text throws
// std::runtime_error naming the offset, so a test fails saying where.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace se_test::json {

struct Value {
  enum class Type { kNull, kBool, kNumber, kString, kArray, kObject };
  Type type = Type::kNull;
  bool boolean = false;
  double number = 0;
  std::string string;
  std::vector<Value> array;
  std::vector<std::pair<std::string, Value>> object;  // in file order

  bool is_null() const { return type == Type::kNull; }
  bool is_number() const { return type == Type::kNumber; }
  bool is_string() const { return type == Type::kString; }
  bool is_array() const { return type == Type::kArray; }
  bool is_object() const { return type == Type::kObject; }

  bool has(std::string_view key) const { return find(key) != nullptr; }
  const Value* find(std::string_view key) const {
    for (const auto& [name, value] : object) {
      if (name == key) return &value;
    }
    return nullptr;
  }
  // The member `key`; throws when there is none, so that a test reports it.
  const Value& operator[](std::string_view key) const {
    if (type != Type::kObject) throw std::runtime_error("json: not an object, looking up '" + std::string(key) + "'");
    const Value* value = find(key);
    if (value == nullptr) throw std::runtime_error("json: no member '" + std::string(key) + "'");
    return *value;
  }
  const Value& operator[](std::size_t index) const {
    if (type != Type::kArray || index >= array.size())
      throw std::runtime_error("json: no element " + std::to_string(index));
    return array[index];
  }
  const std::string& str() const {
    if (type != Type::kString) throw std::runtime_error("json: not a string");
    return string;
  }
  double num() const {
    if (type != Type::kNumber) throw std::runtime_error("json: not a number");
    return number;
  }
  std::int64_t integer() const { return static_cast<std::int64_t>(num()); }
};

namespace detail {

class Parser {
 public:
  explicit Parser(std::string_view text) : text_(text) {}

  Value Document() {
    Value value = Parse(0);
    Space();
    if (at_ != text_.size()) Fail("text after the document");
    return value;
  }

 private:
  [[noreturn]] void Fail(const std::string& what) const {
    throw std::runtime_error("json: " + what + " at offset " + std::to_string(at_));
  }
  void Space() {
    while (at_ < text_.size() &&
           (text_[at_] == ' ' || text_[at_] == '\t' || text_[at_] == '\n' || text_[at_] == '\r')) {
      ++at_;
    }
  }
  char Peek() {
    Space();
    if (at_ >= text_.size()) Fail("unexpected end");
    return text_[at_];
  }
  void Expect(char c) {
    if (Peek() != c) Fail(std::string("expected '") + c + "'");
    ++at_;
  }
  bool Literal(std::string_view word) {
    if (text_.substr(at_, word.size()) != word) return false;
    at_ += word.size();
    return true;
  }

  Value Parse(int depth) {
    if (depth > 256) Fail("nesting too deep");
    Value value;
    const char c = Peek();
    if (c == '{') {
      value.type = Value::Type::kObject;
      ++at_;
      if (Peek() == '}') {
        ++at_;
        return value;
      }
      while (true) {
        if (Peek() != '"') Fail("expected a member name");
        std::string name = String();
        Expect(':');
        value.object.emplace_back(std::move(name), Parse(depth + 1));
        if (Peek() == ',') {
          ++at_;
          continue;
        }
        Expect('}');
        return value;
      }
    }
    if (c == '[') {
      value.type = Value::Type::kArray;
      ++at_;
      if (Peek() == ']') {
        ++at_;
        return value;
      }
      while (true) {
        value.array.push_back(Parse(depth + 1));
        if (Peek() == ',') {
          ++at_;
          continue;
        }
        Expect(']');
        return value;
      }
    }
    if (c == '"') {
      value.type = Value::Type::kString;
      value.string = String();
      return value;
    }
    if (Literal("true")) {
      value.type = Value::Type::kBool;
      value.boolean = true;
      return value;
    }
    if (Literal("false")) {
      value.type = Value::Type::kBool;
      return value;
    }
    if (Literal("null")) return value;
    value.type = Value::Type::kNumber;
    value.number = Number();
    return value;
  }

  double Number() {
    const std::size_t start = at_;
    auto digits = [&] {
      const std::size_t first = at_;
      while (at_ < text_.size() && text_[at_] >= '0' && text_[at_] <= '9') ++at_;
      if (at_ == first) Fail("expected a digit");
    };
    if (at_ < text_.size() && text_[at_] == '-') ++at_;
    if (at_ < text_.size() && text_[at_] == '0') {
      ++at_;
    } else {
      digits();
    }
    if (at_ < text_.size() && text_[at_] == '.') {
      ++at_;
      digits();
    }
    if (at_ < text_.size() && (text_[at_] == 'e' || text_[at_] == 'E')) {
      ++at_;
      if (at_ < text_.size() && (text_[at_] == '+' || text_[at_] == '-')) ++at_;
      digits();
    }
    return std::strtod(std::string(text_.substr(start, at_ - start)).c_str(), nullptr);
  }

  unsigned Hex4() {
    if (at_ + 4 > text_.size()) Fail("short \\u escape");
    unsigned code = 0;
    for (int i = 0; i < 4; ++i) {
      const char h = text_[at_++];
      code <<= 4;
      if (h >= '0' && h <= '9') {
        code |= static_cast<unsigned>(h - '0');
      } else if (h >= 'a' && h <= 'f') {
        code |= static_cast<unsigned>(h - 'a' + 10);
      } else if (h >= 'A' && h <= 'F') {
        code |= static_cast<unsigned>(h - 'A' + 10);
      } else {
        Fail("bad hex digit");
      }
    }
    return code;
  }

  static void Utf8(std::string& out, unsigned code) {
    if (code < 0x80) {
      out += static_cast<char>(code);
    } else if (code < 0x800) {
      out += static_cast<char>(0xc0 | (code >> 6));
      out += static_cast<char>(0x80 | (code & 0x3f));
    } else if (code < 0x10000) {
      out += static_cast<char>(0xe0 | (code >> 12));
      out += static_cast<char>(0x80 | ((code >> 6) & 0x3f));
      out += static_cast<char>(0x80 | (code & 0x3f));
    } else {
      out += static_cast<char>(0xf0 | (code >> 18));
      out += static_cast<char>(0x80 | ((code >> 12) & 0x3f));
      out += static_cast<char>(0x80 | ((code >> 6) & 0x3f));
      out += static_cast<char>(0x80 | (code & 0x3f));
    }
  }

  std::string String() {
    Expect('"');
    std::string out;
    while (true) {
      if (at_ >= text_.size()) Fail("unterminated string");
      const char c = text_[at_++];
      if (c == '"') return out;
      if (static_cast<unsigned char>(c) < 0x20) Fail("control character in a string");
      if (c != '\\') {
        out += c;
        continue;
      }
      if (at_ >= text_.size()) Fail("unterminated escape");
      switch (const char e = text_[at_++]) {
        case '"': out += '"'; break;
        case '\\': out += '\\'; break;
        case '/': out += '/'; break;
        case 'b': out += '\b'; break;
        case 'f': out += '\f'; break;
        case 'n': out += '\n'; break;
        case 'r': out += '\r'; break;
        case 't': out += '\t'; break;
        case 'u': {
          unsigned code = Hex4();
          if (code >= 0xd800 && code < 0xdc00) {
            if (!Literal("\\u")) Fail("lone high surrogate");
            const unsigned low = Hex4();
            if (low < 0xdc00 || low >= 0xe000) Fail("bad low surrogate");
            code = 0x10000 + ((code - 0xd800) << 10) + (low - 0xdc00);
          } else if (code >= 0xdc00 && code < 0xe000) {
            Fail("lone low surrogate");
          }
          Utf8(out, code);
          break;
        }
        default: Fail(std::string("bad escape \\") + e);
      }
    }
  }

  std::string_view text_;
  std::size_t at_ = 0;
};

}  // namespace detail

inline Value Parse(std::string_view text) { return detail::Parser(text).Document(); }

}  // namespace se_test::json
