// The UTF-8 well-formedness table of RFC 3629 (section 4), as a byte-at-a-time checker.
#include "api/utf8.h"

namespace gpurent::http {

bool Utf8Validator::feed(unsigned char b) {
  if (!ok_) return false;
  if (pending_ > 0) {
    if (b < low_ || b > high_) return ok_ = false;
    --pending_;
    low_ = 0x80;
    high_ = 0xBF;
    return true;
  }
  if (b < 0x80) return true;
  if (b >= 0xC2 && b <= 0xDF) {
    pending_ = 1;
  } else if (b >= 0xE0 && b <= 0xEF) {
    pending_ = 2;
    if (b == 0xE0) low_ = 0xA0;   // below is an overlong form
    if (b == 0xED) high_ = 0x9F;  // above are the surrogates
  } else if (b >= 0xF0 && b <= 0xF4) {
    pending_ = 3;
    if (b == 0xF0) low_ = 0x90;   // below is an overlong form
    if (b == 0xF4) high_ = 0x8F;  // above is past U+10FFFF
  } else {
    // 80..BF cannot start a sequence; C0, C1 and F5..FF never appear.
    return ok_ = false;
  }
  return true;
}

bool is_valid_utf8(std::string_view text) {
  Utf8Validator v;
  for (char c : text) {
    if (!v.feed(static_cast<unsigned char>(c))) return false;
  }
  return v.complete();
}

std::size_t utf8_sequence_length(std::string_view text, std::size_t pos) {
  Utf8Validator v;
  for (std::size_t i = pos; i < text.size(); ++i) {
    if (!v.feed(static_cast<unsigned char>(text[i]))) return 0;
    if (v.complete()) return i - pos + 1;
  }
  return 0;
}

std::string printable_name(std::string_view raw, std::size_t max_bytes) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string out;
  for (std::size_t i = 0; i < raw.size();) {
    unsigned char c = static_cast<unsigned char>(raw[i]);
    std::size_t n = c >= 0x20 && c < 0x7f ? 1 : c >= 0x80 ? utf8_sequence_length(raw, i) : 0;
    std::size_t width = n > 0 ? n : 3;
    if (out.size() + width > max_bytes) break;
    if (n > 0) {
      out.append(raw.substr(i, n));
      i += n;
    } else {
      out += '%';
      out += kHex[c >> 4];
      out += kHex[c & 0xF];
      ++i;
    }
  }
  return out;
}

}  // namespace gpurent::http
