// The error convention: Status codes, their exceptions and C codes, and
// StatusOr for internal functions that produce a value or fail.
#include <catch2/catch.hpp>

#include <memory>

#include "c_api/c_guard.h"
#include "chorus/error.h"
#include "chorus/status.h"
#include "common/status_or.h"

using namespace chorus;

TEST_CASE("An internal error has its own code, exception, C code and a message that says so", "[status]") {
  const Status s = Status::internal("a response names cache slot 3, which is empty on this rank");
  REQUIRE(s.code() == StatusCode::kInternal);
  REQUIRE(s.message() == "internal: a response names cache slot 3, which is empty on this rank");
  REQUIRE(s.to_string() == "Internal: " + s.message());
  REQUIRE_THROWS_AS(throw_if_error(s), InternalError);
  REQUIRE(detail::code_of(s.code()) == CHORUS_ERR_INTERNAL);
}

TEST_CASE("The codes keep their numbers (the C ABI returns them)", "[status]") {
  REQUIRE(static_cast<int>(StatusCode::kUnknownError) == 1);
  REQUIRE(static_cast<int>(StatusCode::kTimeout) == 6);
  REQUIRE(static_cast<int>(StatusCode::kInternal) == 7);
  REQUIRE(detail::code_of(StatusCode::kUnknownError) == CHORUS_ERR_UNKNOWN);
  REQUIRE(detail::code_of(StatusCode::kInvalidArgument) == CHORUS_ERR_INVALID_ARGUMENT);
  REQUIRE(detail::code_of(StatusCode::kTimeout) == CHORUS_ERR_TIMEOUT);
}

TEST_CASE("StatusOr holds a value or the reason there is none", "[status]") {
  detail::StatusOr<std::unique_ptr<int>> good(std::make_unique<int>(5));
  REQUIRE(good.is_ok());
  REQUIRE(good.status().is_ok());
  REQUIRE(*good.value() == 5);
  std::unique_ptr<int> taken = std::move(good).value();
  REQUIRE(*taken == 5);

  detail::StatusOr<std::shared_ptr<int>> bad(Status::invalid_argument("no room for tensor 'w'"));
  REQUIRE_FALSE(bad.is_ok());
  REQUIRE(bad.status().code() == StatusCode::kInvalidArgument);
  REQUIRE(bad.status().message() == "no room for tensor 'w'");
  REQUIRE(std::move(bad).value_or(nullptr) == nullptr);
}
