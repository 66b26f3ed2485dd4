// Bearer tokens: the verifier's rules, and the same refusals through HTTP.
#include <openssl/evp.h>
#include <openssl/pem.h>

#include "server/server_test_util.h"

namespace loam::server {
namespace {

using nlohmann::json;

struct KeyPair {
  std::string private_pem;
  std::string public_pem;
};

KeyPair Generate(const char* type, const char* param = nullptr) {
  EVP_PKEY* key = nullptr;
  if (std::string(type) == "RSA") {
    key = EVP_PKEY_Q_keygen(nullptr, nullptr, "RSA", static_cast<size_t>(2048));
  } else if (std::string(type) == "EC") {
    key = EVP_PKEY_Q_keygen(nullptr, nullptr, "EC", param);
  } else {
    key = EVP_PKEY_Q_keygen(nullptr, nullptr, type);
  }
  KeyPair out;
  BIO* priv = BIO_new(BIO_s_mem());
  BIO* pub = BIO_new(BIO_s_mem());
  PEM_write_bio_PrivateKey(priv, key, nullptr, nullptr, 0, nullptr, nullptr);
  PEM_write_bio_PUBKEY(pub, key);
  char* data = nullptr;
  long n = BIO_get_mem_data(priv, &data);
  out.private_pem.assign(data, static_cast<size_t>(n));
  n = BIO_get_mem_data(pub, &data);
  out.public_pem.assign(data, static_cast<size_t>(n));
  BIO_free(priv);
  BIO_free(pub);
  EVP_PKEY_free(key);
  return out;
}

int64_t Now() { return Clock::System()->NowMicros() / 1'000'000; }

json Claims(int64_t ttl = 600) {
  return {{"sub", "ada"}, {"loam_workspace", "ws1"}, {"exp", Now() + ttl}};
}

std::string Unsigned(const json& header, const json& claims) {
  return Base64UrlEncode(header.dump()) + "." + Base64UrlEncode(claims.dump()) + ".";
}

TEST(JwtTest, Hs256AcceptsItsOwnTokensOnly) {
  auto v = JwtVerifier::FromSecret(kTestSecret, {}).value();
  const std::string good = SignJwt(kTestSecret, Claims().dump(), true).value();
  Result<JwtClaims> c = v->Verify(good, Now());
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->subject, "ada");
  EXPECT_EQ(c->workspace, "ws1");
  const std::string other =
      SignJwt("another-secret-of-at-least-32-bytes!!", Claims().dump(), true).value();
  EXPECT_TRUE(v->Verify(other, Now()).status().IsUnauthenticated());
  std::string tampered = good;
  const size_t dot = tampered.find('.');
  tampered[dot + 3] = tampered[dot + 3] == 'A' ? 'B' : 'A';
  EXPECT_TRUE(v->Verify(tampered, Now()).status().IsUnauthenticated());
  EXPECT_TRUE(v->Verify(good.substr(0, good.size() - 5), Now()).status().IsUnauthenticated());
  EXPECT_TRUE(v->Verify(std::string(10000, 'a'), Now()).status().IsUnauthenticated());
  EXPECT_TRUE(v->Verify("", Now()).status().IsUnauthenticated());
  EXPECT_TRUE(v->Verify("a.b", Now()).status().IsUnauthenticated());
}

TEST(JwtTest, WeakSecretsAreRefused) {
  Result<std::shared_ptr<JwtVerifier>> weak = JwtVerifier::FromSecret("short", {});
  EXPECT_TRUE(weak.status().IsInvalidArgument());
  EXPECT_NE(weak.status().message().find("at least 32 bytes"), std::string::npos);
}

TEST(JwtTest, AlgNoneAndUnconfiguredAlgorithmsAreRefused) {
  auto v = JwtVerifier::FromSecret(kTestSecret, {}).value();
  for (const char* alg : {"none", "None", "HS512", "RS256"}) {
    Status s = v->Verify(Unsigned({{"alg", alg}}, Claims()), Now()).status();
    EXPECT_TRUE(s.IsUnauthenticated()) << alg;
  }
}

TEST(JwtTest, TimeClaims) {
  JwtPolicy policy;
  policy.leeway_seconds = 30;
  auto v = JwtVerifier::FromSecret(kTestSecret, policy).value();
  json expired = Claims(-31);
  EXPECT_NE(v->Verify(SignJwt(kTestSecret, expired.dump(), true).value(), Now())
                .status()
                .message()
                .find("expired"),
            std::string::npos);
  EXPECT_TRUE(
      v->Verify(SignJwt(kTestSecret, Claims(-20).dump(), true).value(), Now()).ok());  // leeway
  json no_exp = Claims();
  no_exp.erase("exp");
  EXPECT_TRUE(v->Verify(SignJwt(kTestSecret, no_exp.dump(), true).value(), Now())
                  .status()
                  .IsUnauthenticated());
  json early = Claims();
  early["nbf"] = Now() + 120;
  EXPECT_NE(v->Verify(SignJwt(kTestSecret, early.dump(), true).value(), Now())
                .status()
                .message()
                .find("not valid yet"),
            std::string::npos);
}

TEST(JwtTest, IssuerAndAudience) {
  JwtPolicy policy;
  policy.issuer = "https://issuer.example";
  policy.audience = "loam";
  auto v = JwtVerifier::FromSecret(kTestSecret, policy).value();
  json c = Claims();
  c["iss"] = "https://issuer.example";
  c["aud"] = json::array({"other", "loam"});
  EXPECT_TRUE(v->Verify(SignJwt(kTestSecret, c.dump(), true).value(), Now()).ok());
  c["aud"] = "other";
  EXPECT_TRUE(
      v->Verify(SignJwt(kTestSecret, c.dump(), true).value(), Now()).status().IsUnauthenticated());
  c["aud"] = "loam";
  c["iss"] = "https://evil.example";
  EXPECT_TRUE(
      v->Verify(SignJwt(kTestSecret, c.dump(), true).value(), Now()).status().IsUnauthenticated());
}

TEST(JwtTest, AsymmetricKeysFromPem) {
  const std::pair<const char*, const char*> kinds[] = {
      {"RSA", nullptr}, {"EC", "P-256"}, {"ED25519", nullptr}};
  for (const auto& [type, param] : kinds) {
    const KeyPair k = Generate(type, param);
    auto v = JwtVerifier::FromPublicKeyPem(k.public_pem, {}).value();
    const std::string token = SignJwt(k.private_pem, Claims().dump(), false).value();
    EXPECT_TRUE(v->Verify(token, Now()).ok()) << type;
    const KeyPair other = Generate(type, param);
    EXPECT_TRUE(v->Verify(SignJwt(other.private_pem, Claims().dump(), false).value(), Now())
                    .status()
                    .IsUnauthenticated())
        << type;
    // HS/RS confusion: an HS256 token whose "secret" is the public key.
    const std::string confused = SignJwt(k.public_pem, Claims().dump(), true).value();
    EXPECT_TRUE(v->Verify(confused, Now()).status().IsUnauthenticated()) << type;
  }
  const KeyPair p384 = Generate("EC", "P-384");
  EXPECT_TRUE(JwtVerifier::FromPublicKeyPem(p384.public_pem, {}).status().IsInvalidArgument());
}

TEST(JwtTest, JwksKeysSelectedByKid) {
  const KeyPair ed = Generate("ED25519");
  // The Ed25519 public key's raw 32 bytes are the PEM's last 32 bytes of DER.
  BIO* bio = BIO_new_mem_buf(ed.public_pem.data(), static_cast<int>(ed.public_pem.size()));
  EVP_PKEY* key = PEM_read_bio_PUBKEY(bio, nullptr, nullptr, nullptr);
  BIO_free(bio);
  unsigned char raw[32];
  size_t len = sizeof(raw);
  ASSERT_EQ(EVP_PKEY_get_raw_public_key(key, raw, &len), 1);
  EVP_PKEY_free(key);
  const json jwks = {{"keys",
                      {{{"kty", "OKP"},
                        {"crv", "Ed25519"},
                        {"kid", "k1"},
                        {"x", Base64UrlEncode(std::string(reinterpret_cast<char*>(raw), len))}}}}};
  auto v = JwtVerifier::FromJwks(jwks.dump(), {}).value();
  EXPECT_TRUE(
      v->Verify(SignJwt(ed.private_pem, Claims().dump(), false, R"({"kid":"k1"})").value(), Now())
          .ok());
  EXPECT_TRUE(
      v->Verify(SignJwt(ed.private_pem, Claims().dump(), false, R"({"kid":"k2"})").value(), Now())
          .status()
          .IsUnauthenticated());
  EXPECT_TRUE(JwtVerifier::FromJwks(R"({"keys":[{"kty":"oct","k":"AAAA"}]})", {})
                  .status()
                  .IsInvalidArgument());
}

class AuthHttpTest : public ServerTest {};

// `token` with its payload re-encoded to name "owner" (the workspace owner)
// and its original signature kept.
std::string TamperedPayload(const std::string& token) {
  const size_t first = token.find('.');
  const size_t second = token.rfind('.');
  json claims = json::parse(Base64UrlDecode(token.substr(first + 1, second - first - 1)).value());
  claims["sub"] = "owner";
  return token.substr(0, first) + "." + Base64UrlEncode(claims.dump()) + token.substr(second);
}

TEST_F(AuthHttpTest, RefusalsAre401AndMissingGrantsAre403) {
  config_.issuer = "iss-1";
  config_.audience = "aud-1";
  const json good = {{"iss", "iss-1"}, {"aud", "aud-1"}};
  const auto status = [&](const std::string& token) {
    return HttpCall(Port(), "GET", "/v1/tables/orders", "", {{"Authorization", "Bearer " + token}});
  };
  EXPECT_EQ(status(Token("ada", 600, good)).status, 200);
  const int64_t now = Now();
  const std::string fresh = Token("ada", 600, good);
  std::vector<std::pair<std::string, std::string>> bad = {
      {"expired", Token("ada", -3600, good)},
      {"not yet valid",
       Token("ada", 600, {{"iss", "iss-1"}, {"aud", "aud-1"}, {"nbf", now + 3600}})},
      {"wrong audience", Token("ada", 600, {{"iss", "iss-1"}, {"aud", "aud-2"}})},
      {"wrong issuer", Token("ada", 600, {{"iss", "iss-2"}, {"aud", "aud-1"}})},
      {"other workspace",
       Token(
           "ada", 600,
           {{"iss", "iss-1"}, {"aud", "aud-1"}, {"loam_workspace", "01ARZ3NDEKTSV4RRFFQ69G5FAV"}})},
      {"bad signature", SignJwt("a-different-secret-that-is-long-enough",
                                json{{"sub", "ada"}, {"exp", now + 60}}.dump(), true)
                            .value()},
      {"alg none", Unsigned({{"alg", "none"}},
                            {{"sub", "ada"}, {"loam_workspace", ws_->id()}, {"exp", now + 60}})},
      {"garbage", "not-a-token"},
      {"tampered payload", TamperedPayload(Token("ada", 600, good))},
      {"truncated signature", fresh.substr(0, fresh.rfind('.') + 10)},
      {"signature dropped", fresh.substr(0, fresh.rfind('.'))},
      {"truncated payload", fresh.substr(0, fresh.find('.') + 12)},
      // Signed, but other parsers read the first "sub" where a last-wins
      // parser reads the second.
      {"a claim named twice", SignJwt(kTestSecret,
                                      R"({"sub":"mallory","iss":"iss-1","aud":"aud-1","exp":)" +
                                          std::to_string(now + 600) + R"(,"loam_workspace":")" +
                                          ws_->id() + R"(","sub":"ada"})",
                                      true)
                                  .value()},
  };
  for (const auto& [why, token] : bad) {
    HttpResult r = status(token);
    EXPECT_EQ(r.status, 401) << why << ": " << r.body;
    EXPECT_EQ(r.Json()["code"], "unauthenticated") << why;
    EXPECT_NE(r.Header("www-authenticate").find("invalid_token"), std::string::npos) << why;
  }
  HttpResult twice = status(bad.back().second);
  EXPECT_NE(twice.Json()["detail"].get<std::string>().find(R"(key "sub" appears twice)"),
            std::string::npos)
      << twice.body;
  HttpResult no_grant = status(Token("mallory", 600, good));
  EXPECT_EQ(no_grant.status, 403);
  EXPECT_EQ(no_grant.Json()["code"], "permission_denied");
  EXPECT_EQ(HttpCall(Port(), "GET", "/v1/tables", "", {{"Authorization", "Basic YWRhOng="}}).status,
            401);
}

// One definition of a principal (common/principal.h) for tokens (401) and
// grantees (400). A name with '/' is a principal like any other, granted
// through its percent-encoded path segment.
TEST_F(AuthHttpTest, PrincipalsHaveOneDefinition) {
  const auto read_as = [&](const std::string& sub) {
    return HttpCall(Port(), "GET", "/v1/tables/orders", "", Auth(sub));
  };
  for (const std::string& sub :
       {std::string("ada\n"), std::string("ada\0", 4), std::string("ada\x7f"), std::string(" ada"),
        std::string("ada\xe2\x80\xa8"), std::string(128, 'a')}) {
    HttpResult r = read_as(sub);
    EXPECT_EQ(r.status, 401) << r.body;
    EXPECT_NE(r.body.find("not a valid principal"), std::string::npos) << r.body;
  }
  const auto grants = [&] {
    return Call("owner", "GET", "/v1/tables/orders", "/v1/tables/{name}").Json()["grants"];
  };
  const json before = grants();
  const std::string pattern = "/v1/tables/{name}/grants/{principal}";
  for (const std::string& name :
       {std::string("ada%0A"), std::string("ada%00"), std::string("%20ada"), std::string("%2E%2E"),
        std::string("ada%E2%80%A8"), std::string(128, 'a')}) {
    HttpResult put = Call("owner", "PUT", "/v1/tables/orders/grants/" + name, pattern,
                          R"({"role":"admin"})", {{"Content-Type", "application/json"}});
    EXPECT_EQ(put.status, 400) << name << ": " << put.body;
    EXPECT_EQ(put.Json()["code"], "invalid_argument");
    EXPECT_NE(put.body.find("printable UTF-8"), std::string::npos) << put.body;
    EXPECT_EQ(Call("owner", "DELETE", "/v1/tables/orders/grants/" + name, pattern).status, 400);
  }
  EXPECT_EQ(grants(), before);
  // A GitHub Actions subject: '/' and ':' are part of the name.
  const std::string subject = "repo:octo-org/app:ref:refs/heads/main";
  EXPECT_EQ(read_as(subject).status, 403);
  HttpResult put = Call(
      "owner", "PUT", "/v1/tables/orders/grants/repo%3Aocto-org%2Fapp%3Aref%3Arefs%2Fheads%2Fmain",
      pattern, R"({"role":"reader"})", {{"Content-Type", "application/json"}});
  ASSERT_EQ(put.status, 200) << put.body;
  EXPECT_EQ(put.Json()["principal"], subject);
  EXPECT_EQ(read_as(subject).status, 200);
  EXPECT_EQ(Call("owner", "DELETE",
                 "/v1/tables/orders/grants/repo:octo-org%2Fapp:ref:refs%2Fheads%2Fmain", pattern)
                .status,
            204);
  EXPECT_EQ(read_as(subject).status, 403);
}

TEST_F(AuthHttpTest, HsRsConfusionThroughHttp) {
  const KeyPair k = Generate("RSA");
  const std::string pem_file = (dir_ / "rsa.pem").string();
  std::ofstream(pem_file) << k.public_pem;
  config_.hs256_secret_file.clear();
  config_.public_key_file = pem_file;
  config_.upload_secret_file = secret_file_;
  const json claims = {{"sub", "ada"}, {"loam_workspace", ws_->id()}, {"exp", Now() + 600}};
  const auto get = [&](const std::string& token) {
    return HttpCall(Port(), "GET", "/v1/tables/orders", "", {{"Authorization", "Bearer " + token}})
        .status;
  };
  EXPECT_EQ(get(SignJwt(k.private_pem, claims.dump(), false).value()), 200);
  const std::string confused = SignJwt(k.public_pem, claims.dump(), true).value();
  HttpResult r =
      HttpCall(Port(), "GET", "/v1/tables/orders", "", {{"Authorization", "Bearer " + confused}});
  EXPECT_EQ(r.status, 401) << r.body;
  EXPECT_EQ(r.Json()["code"], "unauthenticated");
  EXPECT_NE(r.Header("www-authenticate").find("invalid_token"), std::string::npos);
  // An RS256 token whose payload was changed after signing.
  const std::string rs = SignJwt(k.private_pem, claims.dump(), false).value();
  HttpResult tampered = HttpCall(Port(), "GET", "/v1/tables", "",
                                 {{"Authorization", "Bearer " + TamperedPayload(rs)}});
  EXPECT_EQ(tampered.status, 401) << tampered.body;
  EXPECT_EQ(tampered.Json()["code"], "unauthenticated");
}

// The raw answer to one request written as `request` (no client-side
// limits on its size), read until the server closes.
std::string RawExchange(uint16_t port, const std::string& request) {
  boost::asio::io_context ioc;
  boost::asio::ip::tcp::socket raw(ioc);
  raw.connect({boost::asio::ip::make_address("127.0.0.1"), port});
  boost::system::error_code ec;
  boost::asio::write(raw, boost::asio::buffer(request), ec);  // may be cut off by the answer
  std::string out;
  char buf[4096];
  for (size_t n; (n = raw.read_some(boost::asio::buffer(buf), ec)), !ec;) out.append(buf, n);
  return out;
}

// A token too large for the 16 KiB header limit is 431; one under it is
// verified and refused (401). Neither harms the server.
TEST_F(AuthHttpTest, EnormousTokensAreRefusedNotFatal) {
  const std::string good = Token("ada");
  for (const size_t size : {size_t{12} << 10, size_t{17} << 10, size_t{63} << 10}) {
    const std::string token = good + std::string(size - good.size(), 'A');
    HttpResult r =
        HttpCall(Port(), "GET", "/v1/tables", "", {{"Authorization", "Bearer " + token}});
    EXPECT_EQ(r.status, size < (16 << 10) ? 401 : 431) << size << ": " << r.body;
    EXPECT_EQ(r.Header("content-type"), "application/problem+json") << size;
    if (r.status == 401) {
      EXPECT_EQ(r.Json()["code"], "unauthenticated") << size;
      EXPECT_NE(r.Header("www-authenticate").find("invalid_token"), std::string::npos) << size;
    } else {
      EXPECT_EQ(r.Json()["code"], "limit_exceeded") << size;
    }
  }
  // 64 KiB and 1 MiB tokens, past what the test's HTTP client will send.
  for (const size_t size : {size_t{64} << 10, size_t{1} << 20}) {
    const std::string answer =
        RawExchange(Port(), "GET /v1/tables HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " +
                                std::string(size, 'A') + "\r\nConnection: close\r\n\r\n");
    EXPECT_EQ(answer.substr(0, 12), "HTTP/1.1 431") << size << ": " << answer.substr(0, 200);
  }
  EXPECT_EQ(Call("ada", "GET", "/v1/tables", "/v1/tables").status, 200);  // still serving
}

TEST_F(AuthHttpTest, ServerRefusesWeakOrMissingAuthConfiguration) {
  config_.hs256_secret_file.clear();
  Result<std::unique_ptr<Server>> none = Server::Start(service::Service::OpenerOver(ws_), config_);
  EXPECT_TRUE(none.status().IsInvalidArgument());
  EXPECT_NE(none.status().message().find("exactly one of"), std::string::npos);
  const std::string weak = (dir_ / "weak").string();
  std::ofstream(weak) << "short";
  config_.hs256_secret_file = weak;
  Result<std::unique_ptr<Server>> short_secret =
      Server::Start(service::Service::OpenerOver(ws_), config_);
  EXPECT_TRUE(short_secret.status().IsInvalidArgument());
  EXPECT_NE(short_secret.status().message().find("at least 32 bytes"), std::string::npos);
}

}  // namespace
}  // namespace loam::server
