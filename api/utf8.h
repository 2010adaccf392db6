// UTF-8 validation (RFC 3629) for text that arrives from outside: the database stores UTF-8
// only, and JSON output cannot carry anything else.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace gpurent::http {

// Checks a byte stream one byte at a time, so text can be checked while it is decoded
// (percent-escapes) without a copy. Refuses overlong forms, surrogates (U+D800..U+DFFF),
// code points above U+10FFFF, stray continuation bytes and truncated sequences.
class Utf8Validator {
 public:
  // False once the bytes so far cannot begin valid UTF-8; stays false.
  bool feed(unsigned char byte);
  // True when every byte was valid and no sequence is left unfinished.
  bool complete() const { return ok_ && pending_ == 0; }

 private:
  bool ok_ = true;
  std::uint8_t pending_ = 0;  // continuation bytes still expected
  // The range the next continuation byte must fall in; narrower than 80..BF only for the
  // second byte after E0, ED, F0 and F4.
  unsigned char low_ = 0x80;
  unsigned char high_ = 0xBF;
};

bool is_valid_utf8(std::string_view text);

// The length of the valid UTF-8 sequence that starts at text[pos]; 0 when none does.
std::size_t utf8_sequence_length(std::string_view text, std::size_t pos);

// A name taken from a request, fit to print in an error or a log line: at most `max_bytes`,
// cut on a character boundary, with each byte that is neither printable ASCII nor part of
// valid UTF-8 shown as %XX.
std::string printable_name(std::string_view raw, std::size_t max_bytes = 64);

}  // namespace gpurent::http
