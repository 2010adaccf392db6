// Money as integer minor units plus an ISO 4217 currency; never floating point.
#pragma once

#include <nlohmann/json_fwd.hpp>

#include <cstdint>
#include <string>
#include <string_view>

namespace gpurent {

class Money {
 public:
  // Throws std::invalid_argument unless currency is three upper-case ASCII letters.
  Money(std::int64_t amount_minor, std::string_view currency);

  std::int64_t amount_minor() const { return amount_minor_; }
  const std::string& currency() const { return currency_; }

  // Arithmetic requires equal currencies and throws std::overflow_error rather than wrap.
  Money operator+(const Money& other) const;
  Money operator-(const Money& other) const;
  Money operator-() const;
  Money times(std::int64_t factor) const;

  bool operator==(const Money& other) const = default;
  // Ordering is only defined within one currency (throws otherwise).
  bool operator<(const Money& other) const;

  // {"amount_minor": 1234500, "currency": "RUB"}
  nlohmann::json to_json() const;
  // Strict: an object with exactly those two fields, an integer amount and a valid
  // currency; throws gpurent::Error (invalid_request naming `field`) otherwise.
  static Money from_json(const nlohmann::json& j, std::string_view field);

  static bool is_valid_currency(std::string_view currency);

 private:
  void require_same_currency(const Money& other) const;

  std::int64_t amount_minor_;
  std::string currency_;
};

}  // namespace gpurent
