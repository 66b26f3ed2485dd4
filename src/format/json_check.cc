#include "format/json_check.h"

#include <vector>

#include "common/utf8.h"

namespace loam {
namespace {

class Checker {
 public:
  Checker(std::string_view s, int max_depth) : s_(s), max_depth_(max_depth) {}

  JsonCheck Run() {
    if (size_t bad = FindInvalidUtf8(s_); bad != std::string_view::npos) {
      return Fail(bad, "not valid UTF-8");
    }
    if (!Value()) return out_;
    while (!stack_.empty()) {
      if (!Step()) return out_;
    }
    SkipSpace();
    if (i_ != s_.size()) return Fail(i_, "content follows the JSON value");
    return out_;
  }

 private:
  JsonCheck Fail(size_t at, std::string what,
                 JsonCheck::Outcome o = JsonCheck::Outcome::kMalformed) {
    out_.outcome = o;
    out_.offset = at;
    out_.what = std::move(what);
    return out_;
  }
  bool Failed(size_t at, std::string what) {
    Fail(at, std::move(what));
    return false;
  }
  void SkipSpace() {
    while (i_ < s_.size() &&
           (s_[i_] == ' ' || s_[i_] == '\t' || s_[i_] == '\n' || s_[i_] == '\r')) {
      ++i_;
    }
  }
  bool Eat(char c) {
    SkipSpace();
    if (i_ < s_.size() && s_[i_] == c) {
      ++i_;
      return true;
    }
    return false;
  }

  // One value; a container is only opened (Step walks its contents), so
  // nesting costs heap, never stack.
  bool Value() {
    SkipSpace();
    if (i_ >= s_.size()) return Failed(i_, "a value is missing");
    const char c = s_[i_];
    if (c == '{' || c == '[') {
      if (static_cast<int>(stack_.size()) >= max_depth_) {
        Fail(i_, "nested deeper than " + std::to_string(max_depth_) + " levels",
             JsonCheck::Outcome::kTooDeep);
        return false;
      }
      stack_.push_back({c, true});
      ++i_;
      return true;
    }
    if (c == '"') return String();
    if (c == '-' || (c >= '0' && c <= '9')) return Number();
    for (std::string_view lit : {"true", "false", "null"}) {
      if (s_.substr(i_, lit.size()) == lit) {
        i_ += lit.size();
        return true;
      }
    }
    return Failed(i_, "unexpected character");
  }

  // "key": value, inside an object.
  bool Member() {
    SkipSpace();
    if (i_ >= s_.size() || s_[i_] != '"') return Failed(i_, "an object key must be a string");
    if (!String()) return false;
    if (!Eat(':')) return Failed(i_, "':' expected after an object key");
    return Value();
  }

  // One step inside the innermost open container: its close, or its next
  // member (after a ',' unless it is the first).
  bool Step() {
    Open& top = stack_.back();
    const char close = top.bracket == '{' ? '}' : ']';
    if (Eat(close)) {
      stack_.pop_back();
      return true;
    }
    if (!top.first && !Eat(',')) {
      return Failed(i_, std::string("',' or '") + close + "' expected");
    }
    top.first = false;
    return top.bracket == '{' ? Member() : Value();
  }

  bool String() {
    ++i_;  // the opening quote
    while (i_ < s_.size()) {
      const unsigned char c = static_cast<unsigned char>(s_[i_]);
      if (c == '"') {
        ++i_;
        return true;
      }
      if (c < 0x20) return Failed(i_, "a control byte inside a string must be escaped");
      if (c == '\\') {
        if (++i_ >= s_.size()) break;
        const char e = s_[i_];
        if (e == 'u') {
          int unit = 0;
          if (!Hex4(i_ + 1, &unit)) return Failed(i_, "bad \\u escape");
          i_ += 4;
          // UTF-16 surrogates come in pairs: a lone one names no character.
          if (unit >= 0xDC00 && unit <= 0xDFFF) return Failed(i_, "a lone low surrogate");
          if (unit >= 0xD800 && unit <= 0xDBFF) {
            int low = 0;
            if (i_ + 2 >= s_.size() || s_[i_ + 1] != '\\' || s_[i_ + 2] != 'u' ||
                !Hex4(i_ + 3, &low) || low < 0xDC00 || low > 0xDFFF) {
              return Failed(i_, "a high surrogate without its low surrogate");
            }
            i_ += 6;
          }
        } else if (std::string_view("\"\\/bfnrt").find(e) == std::string_view::npos) {
          return Failed(i_, "bad escape");
        }
      }
      ++i_;
    }
    return Failed(i_, "unterminated string");
  }

  bool Number() {
    const size_t start = i_;
    if (s_[i_] == '-') ++i_;
    if (i_ < s_.size() && s_[i_] == '0') {
      ++i_;
    } else if (!Digits()) {
      return Failed(start, "malformed number");
    }
    if (i_ < s_.size() && s_[i_] == '.') {
      ++i_;
      if (!Digits()) return Failed(start, "malformed number");
    }
    if (i_ < s_.size() && (s_[i_] == 'e' || s_[i_] == 'E')) {
      ++i_;
      if (i_ < s_.size() && (s_[i_] == '+' || s_[i_] == '-')) ++i_;
      if (!Digits()) return Failed(start, "malformed number");
    }
    return true;
  }
  bool Digits() {
    const size_t start = i_;
    while (i_ < s_.size() && s_[i_] >= '0' && s_[i_] <= '9') ++i_;
    return i_ > start;
  }
  // The four hex digits at `at`, as a number.
  bool Hex4(size_t at, int* out) const {
    if (at + 4 > s_.size()) return false;
    *out = 0;
    for (size_t k = at; k < at + 4; ++k) {
      const char c = s_[k];
      const int d = c >= '0' && c <= '9'   ? c - '0'
                    : c >= 'a' && c <= 'f' ? c - 'a' + 10
                    : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                           : -1;
      if (d < 0) return false;
      *out = *out * 16 + d;
    }
    return true;
  }

  std::string_view s_;
  int max_depth_;
  size_t i_ = 0;
  struct Open {
    char bracket;  // '{' or '['
    bool first;    // no member read yet
  };
  std::vector<Open> stack_;
  JsonCheck out_;
};

}  // namespace

JsonCheck CheckJsonDocument(std::string_view text, int max_depth) {
  return Checker(text, max_depth).Run();
}

}  // namespace loam
