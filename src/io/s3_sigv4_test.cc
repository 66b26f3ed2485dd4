// The signer against the worked examples in AWS's S3 SigV4 documentation
// ("Signature Calculations for the Authorization Header" and "Query string
// authentication"): credentials AKIAIOSFODNN7EXAMPLE, 2013-05-24T00:00:00Z.
#include "io/s3_sigv4.h"

#include <gtest/gtest.h>

#include "common/crypto.h"

namespace loam::s3 {
namespace {

constexpr int64_t kMay24 = 1369353600;  // 20130524T000000Z
const char kEmptySha[] = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";

Signer ExampleSigner() {
  return Signer{{"AKIAIOSFODNN7EXAMPLE", "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", ""},
                "us-east-1"};
}

std::string Authorization(const std::vector<Header>& headers) {
  for (const auto& [name, value] : headers) {
    if (name == "Authorization") return value;
  }
  return "";
}

TEST(SigV4, Primitives) {
  EXPECT_EQ(Sha256Hex(""), kEmptySha);
  EXPECT_EQ(Sha256Hex("Welcome to Amazon S3."),
            "44ce7dd67c959e0d3524ffac1771dfbba87d2b6b4b4e99e42034a8b803f8b072");
  EXPECT_EQ(Md5Base64(""), "1B2M2Y8AsgTpgAmY7PhCfg==");
  EXPECT_EQ(AmzDate(kMay24), "20130524T000000Z");
  EXPECT_EQ(AwsUriEncode("a b/c$~é", false), "a%20b/c%24~%C3%A9");
  EXPECT_EQ(AwsUriEncode("a/b", true), "a%2Fb");
  // Sorted by name, '=' even when the value is empty (RGW needs "uploads=").
  EXPECT_EQ(CanonicalQueryString({{"uploads", ""}, {"b", "x y"}, {"a", "1"}}),
            "a=1&b=x%20y&uploads=");
}

TEST(SigV4, GetObjectExample) {
  RequestToSign r{"GET", "examplebucket.s3.amazonaws.com", "/test.txt",
                  {},    {{"Range", "bytes=0-9"}},         kEmptySha};
  EXPECT_EQ(Authorization(ExampleSigner().Sign(r, kMay24)),
            "AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3/aws4_request,"
            "SignedHeaders=host;range;x-amz-content-sha256;x-amz-date,"
            "Signature=f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41");
}

TEST(SigV4, PutObjectExample) {
  RequestToSign r{
      "PUT",
      "examplebucket.s3.amazonaws.com",
      "/" + AwsUriEncode("test$file.text", false),
      {},
      {{"Date", "Fri, 24 May 2013 00:00:00 GMT"}, {"x-amz-storage-class", "REDUCED_REDUNDANCY"}},
      Sha256Hex("Welcome to Amazon S3.")};
  const std::string auth = Authorization(ExampleSigner().Sign(r, kMay24));
  EXPECT_NE(
      auth.find("SignedHeaders=date;host;x-amz-content-sha256;x-amz-date;x-amz-storage-class"),
      std::string::npos)
      << auth;
  EXPECT_NE(auth.find("Signature=98ad721746da40c64f1a55b78f14c238d841ea1380cd77a1b5971af0ece108bd"),
            std::string::npos)
      << auth;
}

TEST(SigV4, SubresourceAndListExamples) {
  RequestToSign lifecycle{"GET",    "examplebucket.s3.amazonaws.com", "/", {{"lifecycle", ""}}, {},
                          kEmptySha};
  EXPECT_NE(Authorization(ExampleSigner().Sign(lifecycle, kMay24))
                .find("Signature=fea454ca298b7da1c68078a5d1bdbfbbe0d65c699e0f91ac7a200a0136783543"),
            std::string::npos);
  RequestToSign list{"GET", "examplebucket.s3.amazonaws.com",
                     "/",   {{"prefix", "J"}, {"max-keys", "2"}},
                     {},    kEmptySha};
  EXPECT_NE(Authorization(ExampleSigner().Sign(list, kMay24))
                .find("Signature=34b48302e7b5fa45bde8084f4b7868a86f0a534bc59db6670ed5711ef69dc6f7"),
            std::string::npos);
}

TEST(SigV4, PresignedGetExample) {
  RequestToSign r{"GET", "examplebucket.s3.amazonaws.com", "/test.txt", {}, {}, ""};
  EXPECT_EQ(ExampleSigner().PresignQuery(r, kMay24, 86400),
            "X-Amz-Algorithm=AWS4-HMAC-SHA256"
            "&X-Amz-Credential=AKIAIOSFODNN7EXAMPLE%2F20130524%2Fus-east-1%2Fs3%2Faws4_request"
            "&X-Amz-Date=20130524T000000Z&X-Amz-Expires=86400&X-Amz-SignedHeaders=host"
            "&X-Amz-Signature=aeeed9bbccd4d02ee5c0109b86d86835f995330da4c265957d157751f604d404");
}

TEST(SigV4, SessionTokenIsSigned) {
  Signer s = ExampleSigner();
  s.credentials.session_token = "token/with+chars";
  RequestToSign r{"GET", "h", "/k", {}, {}, kEmptySha};
  const std::vector<Header> headers = s.Sign(r, kMay24);
  EXPECT_NE(Authorization(headers).find("x-amz-date;x-amz-security-token"), std::string::npos);
  EXPECT_NE(s.PresignQuery(r, kMay24, 60).find("X-Amz-Security-Token=token%2Fwith%2Bchars"),
            std::string::npos);
}

}  // namespace
}  // namespace loam::s3
