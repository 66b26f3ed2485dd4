#include "loam/status.h"

#include <gtest/gtest.h>

#include <memory>
#include <set>
#include <string>

#include "common/status_macros.h"
#include "loam/result.h"

namespace loam {
namespace {

TEST(StatusTest, DefaultIsOkAndCheap) {
  Status s;
  EXPECT_TRUE(s.ok());
  EXPECT_EQ(s.code(), StatusCode::kOk);
  EXPECT_EQ(s.message(), "");
  EXPECT_EQ(s.ToString(), "OK");
}

TEST(StatusTest, FactoriesSetCanonicalCodes) {
  EXPECT_TRUE(Status::InvalidArgument("x").IsInvalidArgument());
  EXPECT_TRUE(Status::NotFound("x").IsNotFound());
  EXPECT_TRUE(Status::AlreadyExists("x").IsAlreadyExists());
  EXPECT_TRUE(Status::Aborted("x").IsAborted());
  EXPECT_TRUE(Status::FailedPrecondition("x").IsFailedPrecondition());
  EXPECT_TRUE(Status::Unavailable("x").IsUnavailable());
  EXPECT_TRUE(Status::DataLoss("x").IsDataLoss());
  EXPECT_TRUE(Status::PermissionDenied("x").IsPermissionDenied());
  EXPECT_TRUE(Status::ResourceExhausted("x").IsResourceExhausted());
  EXPECT_TRUE(Status::Internal("x").IsInternal());
  EXPECT_TRUE(Status::Unimplemented("x").IsUnimplemented());
  EXPECT_FALSE(Status::NotFound("x").ok());
  EXPECT_FALSE(Status::NotFound("x").IsAborted());
}

TEST(StatusTest, ContextIsPrependedOutermostFirst) {
  Status s = Status::NotFound("no object 'k'").WithContext("reading head").WithContext("opening t");
  EXPECT_EQ(s.message(), "no object 'k'");
  EXPECT_EQ(s.context(), "opening t; reading head");
  EXPECT_EQ(s.ToString(), "NotFound: no object 'k' (opening t; reading head)");
  EXPECT_TRUE(Status::OK().WithContext("ignored").ok());
}

TEST(StatusTest, CopyIsDeep) {
  Status a = Status::DataLoss("bad checksum");
  Status b = a;
  b = std::move(b).WithContext("page 3");
  EXPECT_EQ(a.context(), "");
  EXPECT_EQ(b.context(), "page 3");
  EXPECT_EQ(b.code(), StatusCode::kDataLoss);
}

Result<int> Half(int x) {
  if (x % 2 != 0) return Status::InvalidArgument("odd: " + std::to_string(x));
  return x / 2;
}

Result<int> Quarter(int x) {
  ASSIGN_OR_RETURN(int h, Half(x));
  ASSIGN_OR_RETURN(h, Half(h));
  return h;
}

Status CheckEven(int x) {
  RETURN_NOT_OK(Half(x));
  return Status::OK();
}

Status CheckWithContext(int x) {
  RETURN_NOT_OK_CTX(Half(x), "checking " + std::to_string(x));
  return Status::OK();
}

TEST(ResultTest, ValueAndErrorPropagate) {
  Result<int> ok = Quarter(8);
  ASSERT_TRUE(ok.ok());
  EXPECT_EQ(*ok, 2);
  Result<int> bad = Quarter(6);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().message(), "odd: 3");
  EXPECT_TRUE(CheckEven(4).ok());
  EXPECT_TRUE(CheckEven(5).IsInvalidArgument());
  EXPECT_EQ(CheckWithContext(5).context(), "checking 5");
}

TEST(ResultTest, OkStatusBecomesInternalError) {
  Result<int> r{Status::OK()};
  EXPECT_FALSE(r.ok());
  EXPECT_TRUE(r.status().IsInternal());
}

TEST(StatusTest, ErrorCodesDefaultToTheCategoryAndCanBeNamed) {
  EXPECT_EQ(Status::OK().error_code(), ErrorCode::kNone);
  EXPECT_EQ(Status::InvalidArgument("x").error_code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(Status::ResourceExhausted("x").error_code(), ErrorCode::kLimitExceeded);
  EXPECT_EQ(Status::Aborted("x").error_code(), ErrorCode::kConflict);
  EXPECT_EQ(Status::FailedPrecondition("x").error_code(), ErrorCode::kPreconditionFailed);
  const Status conflict = Status::Conflict("moved");
  EXPECT_TRUE(conflict.IsFailedPrecondition());
  EXPECT_TRUE(conflict.Is(ErrorCode::kConflict));
  const Status schema =
      Status::FailedPrecondition("changed").WithErrorCode(ErrorCode::kSchemaConflict);
  EXPECT_TRUE(schema.Is(ErrorCode::kSchemaConflict));
  EXPECT_FALSE(schema.Is(ErrorCode::kConflict));
  // The code survives context, copies and a new message; OK stays OK.
  const Status framed = schema.WithContext("loading").WithMessage("f.csv: changed");
  EXPECT_TRUE(framed.Is(ErrorCode::kSchemaConflict));
  EXPECT_EQ(framed.message(), "f.csv: changed");
  EXPECT_EQ(framed.context(), "loading");
  EXPECT_TRUE(Status::OK().WithErrorCode(ErrorCode::kConflict).ok());
}

TEST(StatusTest, ErrorCodeNamesAreStableAndRoundTrip) {
  EXPECT_EQ(ErrorCodeName(ErrorCode::kDuplicateKey), "duplicate_key");
  EXPECT_EQ(ErrorCodeName(ErrorCode::kIdempotencyKeyReused), "idempotency_key_reused");
  std::set<std::string_view> names;
  for (int c = 0; c <= static_cast<int>(kLastErrorCode); ++c) {
    const ErrorCode code = static_cast<ErrorCode>(c);
    EXPECT_TRUE(names.insert(ErrorCodeName(code)).second) << ErrorCodeName(code);
    EXPECT_EQ(ErrorCodeFromName(ErrorCodeName(code)), code);
  }
  EXPECT_EQ(ErrorCodeFromName("no_such_code"), ErrorCode::kInternal);
}

TEST(StatusTest, DetailsTravelWithCopiesAndAreReplaced) {
  Status s = Status::ResourceExhausted("full")
                 .WithErrorCode(ErrorCode::kOverloaded)
                 .WithDetail("retryAfterMillis", "1500")
                 .WithDetail("limit", "queuedRuns");
  Status copy = s.WithDetail("limit", "queuedBytes");
  EXPECT_EQ(s.detail("limit"), "queuedRuns");
  EXPECT_EQ(copy.detail("limit"), "queuedBytes");
  EXPECT_EQ(copy.detail("retryAfterMillis"), "1500");
  EXPECT_EQ(copy.detail("absent"), "");
  EXPECT_TRUE(copy.Is(ErrorCode::kOverloaded));
  EXPECT_EQ(Status::OK().WithDetail("k", "v").detail("k"), "");
}

TEST(ResultTest, MoveOnlyValues) {
  Result<std::unique_ptr<int>> r = std::make_unique<int>(7);
  ASSERT_TRUE(r.ok());
  std::unique_ptr<int> p = std::move(r).value();
  EXPECT_EQ(*p, 7);
}

TEST(ResultTest, ValueOr) {
  EXPECT_EQ(Half(3).value_or(-1), -1);
  EXPECT_EQ(Half(4).value_or(-1), 2);
}

TEST(ResultDeathTest, ValueOnErrorAbortsWithMessage) {
  EXPECT_DEATH({ (void)Half(3).value(); }, "odd: 3");
}

}  // namespace
}  // namespace loam
