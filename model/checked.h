// Checked narrowing: a number becomes an integer of a given type only when it fits, never wrapped or
// truncated. Every reader and option parser that stores a count in a smaller type goes through here, so a
// value beyond the type is an error the caller names (file:line:field, a JSON key path, or the option).
#pragma once

#include <cmath>
#include <limits>
#include <optional>
#include <string>
#include <type_traits>

namespace arfit {

// `v` as To when To can hold it exactly, else nullopt. `From` is an integer type, or a floating type whose
// value must then be finite and whole (1e20 does not fit an int64; 2.5 is not an integer).
template <class To, class From>
std::optional<To> checked_narrow(From v) {
  static_assert(std::is_integral_v<To> && !std::is_same_v<To, bool>, "checked_narrow converts to integer types");
  using L = std::numeric_limits<To>;
  if constexpr (std::is_floating_point_v<From>) {
    if (!std::isfinite(v) || v != std::floor(v)) return std::nullopt;
    // Powers of two are exact in every floating type: To holds [-2^digits, 2^digits) (signed) or [0, 2^digits).
    const long double top = std::ldexp(1.0L, L::digits);
    const long double x = static_cast<long double>(v);
    if (x >= top || x < (std::is_signed_v<To> ? -top : 0.0L)) return std::nullopt;
    return static_cast<To>(v);
  } else {
    static_assert(std::is_integral_v<From>, "checked_narrow converts integer or floating values");
    if constexpr (std::is_signed_v<From> && !std::is_signed_v<To>) {
      if (v < 0 || static_cast<std::make_unsigned_t<From>>(v) > L::max()) return std::nullopt;
    } else if constexpr (!std::is_signed_v<From> && std::is_signed_v<To>) {
      if (v > static_cast<std::make_unsigned_t<To>>(L::max())) return std::nullopt;
    } else {
      if (v < L::min() || v > L::max()) return std::nullopt;
    }
    return static_cast<To>(v);
  }
}

// Why a value did not fit To, for the caller's message: "is not a whole number in -2147483648..2147483647".
template <class To>
std::string narrow_failure(const std::string& value) {
  using L = std::numeric_limits<To>;
  return "'" + value + "' is not a whole number in " + std::to_string(L::min()) + ".." + std::to_string(L::max());
}

}  // namespace arfit
