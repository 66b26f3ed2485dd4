#include "service/staging.h"

#include <gtest/gtest.h>

namespace loam::service {
namespace {

const std::string kKey = "0123456789abcdef0123456789abcdef";

UploadGrant Grant() {
  return {"01J00000000000000000000000", "ws/ingestion-staging/v1/x/data", 2000, 12, ""};
}

TEST(UploadTokenTest, RoundTripsUntilItExpires) {
  const std::string token = SignUploadToken(Grant(), kKey);
  Result<UploadGrant> g = VerifyUploadToken(token, kKey, 1999);
  ASSERT_TRUE(g.ok()) << g.status();
  EXPECT_EQ(g->key, Grant().key);
  EXPECT_EQ(g->size, 12u);
  Status late = VerifyUploadToken(token, kKey, 2000).status();
  EXPECT_TRUE(late.IsPermissionDenied());
  EXPECT_NE(late.message().find("expired"), std::string::npos);
}

TEST(UploadTokenTest, AnyChangeOrAnotherSecretIsRefused) {
  const std::string token = SignUploadToken(Grant(), kKey);
  EXPECT_TRUE(VerifyUploadToken(token, kKey + "x", 0).status().IsPermissionDenied());
  for (size_t i = 0; i < token.size(); i += 7) {
    std::string t = token;
    t[i] = t[i] == 'a' ? 'b' : 'a';
    EXPECT_TRUE(VerifyUploadToken(t, kKey, 0).status().IsPermissionDenied()) << i;
  }
  EXPECT_TRUE(VerifyUploadToken("", kKey, 0).status().IsPermissionDenied());
  EXPECT_TRUE(VerifyUploadToken("v1..", kKey, 0).status().IsPermissionDenied());
  EXPECT_TRUE(VerifyUploadToken(std::string(10000, 'a'), kKey, 0).status().IsPermissionDenied());
  // A valid MAC over a payload that is not a grant.
  UploadGrant other = Grant();
  other.key = "another/key";
  const std::string second = SignUploadToken(other, kKey);
  const std::string spliced = token.substr(0, token.rfind('.')) + second.substr(second.rfind('.'));
  EXPECT_TRUE(VerifyUploadToken(spliced, kKey, 0).status().IsPermissionDenied());
}

TEST(StagingTest, SegmentsEncodeReversiblyAndSafely) {
  const std::vector<std::string> principals = {"ada",
                                               "a.b-c_d",
                                               ".hidden",
                                               "..",
                                               "~tilde",
                                               "a/b",
                                               "%2e%2e",
                                               std::string("nul\0x", 5),
                                               "ünï",
                                               std::string(127, 'x'),
                                               std::string(127, '/')};
  for (const std::string& p : principals) {
    const std::string e = EncodeSegment(p);
    EXPECT_EQ(DecodeSegment(e).value(), p);
    EXPECT_EQ(e.find('/'), std::string::npos) << p;
    EXPECT_NE(e, "..");
    EXPECT_NE(e[0], '.');
    EXPECT_TRUE(ValidateObjectKey("x/" + e + "/y").ok()) << e;
  }
  EXPECT_TRUE(DecodeSegment("~4").status().IsInvalidArgument());
  EXPECT_TRUE(DecodeSegment("~zz").status().IsInvalidArgument());
}

TEST(StagingTest, KeysNameTheUtcDayAndEveryVerifiedFact) {
  // 2026-12-01T23:59:59.999999Z and one µs later.
  const int64_t last = 1'796'169'599'999'999;
  EXPECT_EQ(StagingDayPrefix("r", last), "r/ingestion-staging/v1/2026-12-01/");
  EXPECT_EQ(StagingDayPrefix("", last + 1), "ingestion-staging/v1/2026-12-02/");
  StagingPlace p{"r", last, "WS", "a/b", "PIPE", 7, "UP"};
  EXPECT_EQ(StagingDataKey(p),
            "r/ingestion-staging/v1/2026-12-01/workspaces/WS/subjects/~612f62/pipelines/PIPE/"
            "targets/7/uploads/UP/data");
  EXPECT_EQ(StagingUploadPrefix(p) + "data", StagingDataKey(p));
}

TEST(HashingSourceTest, DigestsAndRefusesBytesOverItsLimit) {
  const std::string data = "abc";
  StringSource src(data);
  HashingSource h(src, 3);
  char buf[8];
  EXPECT_EQ(h.Read(buf, 8).value(), 3u);
  EXPECT_EQ(h.Read(buf, 8).value(), 0u);
  EXPECT_EQ(h.HexDigest(), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_EQ(Sha256Hex("abc"), h.HexDigest());
  StringSource big("abcd");
  HashingSource capped(big, 3);
  Status over = capped.Read(buf, 8).status();
  EXPECT_TRUE(over.Is(ErrorCode::kLimitExceeded)) << over;
  EXPECT_TRUE(IsSha256Hex(h.HexDigest()));
  EXPECT_FALSE(IsSha256Hex("ABC"));
}

}  // namespace
}  // namespace loam::service
