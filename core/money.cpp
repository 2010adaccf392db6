// Checked integer money arithmetic and its JSON form.
#include "core/money.h"

#include "core/error.h"

#include <nlohmann/json.hpp>

#include <limits>
#include <stdexcept>

namespace gpurent {

bool Money::is_valid_currency(std::string_view currency) {
  if (currency.size() != 3) return false;
  for (char c : currency) {
    if (c < 'A' || c > 'Z') return false;
  }
  return true;
}

Money::Money(std::int64_t amount_minor, std::string_view currency)
    : amount_minor_(amount_minor), currency_(currency) {
  if (!is_valid_currency(currency)) {
    throw std::invalid_argument("currency must be an ISO 4217 code such as RUB");
  }
}

void Money::require_same_currency(const Money& other) const {
  if (currency_ != other.currency_) {
    throw std::invalid_argument("cannot combine " + currency_ + " with " + other.currency_);
  }
}

Money Money::operator+(const Money& other) const {
  require_same_currency(other);
  std::int64_t sum = 0;
  if (__builtin_add_overflow(amount_minor_, other.amount_minor_, &sum)) {
    throw std::overflow_error("money overflow");
  }
  return Money(sum, currency_);
}

Money Money::operator-(const Money& other) const {
  require_same_currency(other);
  std::int64_t diff = 0;
  if (__builtin_sub_overflow(amount_minor_, other.amount_minor_, &diff)) {
    throw std::overflow_error("money overflow");
  }
  return Money(diff, currency_);
}

Money Money::operator-() const {
  if (amount_minor_ == std::numeric_limits<std::int64_t>::min()) {
    throw std::overflow_error("money overflow");
  }
  return Money(-amount_minor_, currency_);
}

Money Money::times(std::int64_t factor) const {
  std::int64_t product = 0;
  if (__builtin_mul_overflow(amount_minor_, factor, &product)) {
    throw std::overflow_error("money overflow");
  }
  return Money(product, currency_);
}

bool Money::operator<(const Money& other) const {
  require_same_currency(other);
  return amount_minor_ < other.amount_minor_;
}

nlohmann::json Money::to_json() const {
  return {{"amount_minor", amount_minor_}, {"currency", currency_}};
}

Money Money::from_json(const nlohmann::json& j, std::string_view field) {
  if (!j.is_object()) throw Error::invalid_field(field, "must be a money object");
  for (const auto& [key, _] : j.items()) {
    if (key != "amount_minor" && key != "currency") {
      throw Error::invalid_field(std::string(field) + "." + key, "is not a known field");
    }
  }
  auto amount = j.find("amount_minor");
  if (amount == j.end()) {
    throw Error::invalid_field(std::string(field) + ".amount_minor", "is required");
  }
  // Only JSON integers: 12.5 or "1250" are refused, never rounded or parsed.
  if (!amount->is_number_integer()) {
    throw Error::invalid_field(std::string(field) + ".amount_minor", "must be an integer");
  }
  if (amount->is_number_unsigned() &&
      amount->get<std::uint64_t>() >
          static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max())) {
    throw Error::invalid_field(std::string(field) + ".amount_minor", "is out of range");
  }
  auto currency = j.find("currency");
  if (currency == j.end()) {
    throw Error::invalid_field(std::string(field) + ".currency", "is required");
  }
  if (!currency->is_string() || !is_valid_currency(currency->get_ref<const std::string&>())) {
    throw Error::invalid_field(std::string(field) + ".currency",
                               "must be a three-letter ISO 4217 code");
  }
  return Money(amount->get<std::int64_t>(), currency->get<std::string>());
}

}  // namespace gpurent
