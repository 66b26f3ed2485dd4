#include "server/jwt.h"

#include <openssl/bio.h>
#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/ec.h>
#include <openssl/evp.h>
#include <openssl/param_build.h>
#include <openssl/pem.h>

#include <nlohmann/json.hpp>

#include "common/crypto.h"
#include "common/json_parse.h"
#include "common/principal.h"
#include "common/status_macros.h"
#include "service/staging.h"

namespace loam::server {

using nlohmann::json;

// Named (not in the anonymous namespace): JwtVerifier::Key holds one.
struct JwtPkeyFree {
  void operator()(EVP_PKEY* p) const { EVP_PKEY_free(p); }
};
using Pkey = std::unique_ptr<EVP_PKEY, JwtPkeyFree>;

namespace {

Status Denied(const std::string& why) { return Status::Unauthenticated("bearer token " + why); }

// The JWS algorithm a key verifies, from its type; "" when unsupported.
std::string AlgorithmOf(EVP_PKEY* key) {
  switch (EVP_PKEY_get_base_id(key)) {
    case EVP_PKEY_RSA:
      return EVP_PKEY_get_bits(key) >= 2048 ? "RS256" : "";
    case EVP_PKEY_EC: {
      char group[64] = {0};
      size_t len = 0;
      if (EVP_PKEY_get_utf8_string_param(key, OSSL_PKEY_PARAM_GROUP_NAME, group, sizeof(group),
                                         &len) != 1) {
        return "";
      }
      return std::string(group) == "prime256v1" ? "ES256" : "";
    }
    case EVP_PKEY_ED25519:
      return "EdDSA";
    default:
      return "";
  }
}

// ES256 signatures are r||s (32 bytes each); OpenSSL speaks DER.
Result<std::string> RawToDer(std::string_view raw) {
  if (raw.size() != 64) return Denied("has an ES256 signature of the wrong length");
  ECDSA_SIG* sig = ECDSA_SIG_new();
  BIGNUM* r = BN_bin2bn(reinterpret_cast<const unsigned char*>(raw.data()), 32, nullptr);
  BIGNUM* s = BN_bin2bn(reinterpret_cast<const unsigned char*>(raw.data()) + 32, 32, nullptr);
  ECDSA_SIG_set0(sig, r, s);
  unsigned char* der = nullptr;
  const int len = i2d_ECDSA_SIG(sig, &der);
  ECDSA_SIG_free(sig);
  if (len <= 0) return Denied("has a malformed ES256 signature");
  std::string out(reinterpret_cast<char*>(der), static_cast<size_t>(len));
  OPENSSL_free(der);
  return out;
}

Result<std::string> DerToRaw(const std::string& der) {
  const unsigned char* p = reinterpret_cast<const unsigned char*>(der.data());
  ECDSA_SIG* sig = d2i_ECDSA_SIG(nullptr, &p, static_cast<long>(der.size()));
  if (sig == nullptr) return Status::Internal("ECDSA signature not DER");
  std::string raw(64, '\0');
  BN_bn2binpad(ECDSA_SIG_get0_r(sig), reinterpret_cast<unsigned char*>(raw.data()), 32);
  BN_bn2binpad(ECDSA_SIG_get0_s(sig), reinterpret_cast<unsigned char*>(raw.data()) + 32, 32);
  ECDSA_SIG_free(sig);
  return raw;
}

bool VerifyWithKey(EVP_PKEY* key, const std::string& alg, std::string_view data,
                   const std::string& sig) {
  std::string der;
  const std::string* signature = &sig;
  if (alg == "ES256") {
    Result<std::string> d = RawToDer(sig);
    if (!d.ok()) return false;
    der = std::move(*d);
    signature = &der;
  }
  EVP_MD_CTX* ctx = EVP_MD_CTX_new();
  const EVP_MD* md = alg == "EdDSA" ? nullptr : EVP_sha256();
  bool ok = EVP_DigestVerifyInit(ctx, nullptr, md, nullptr, key) == 1 &&
            EVP_DigestVerify(ctx, reinterpret_cast<const unsigned char*>(signature->data()),
                             signature->size(), reinterpret_cast<const unsigned char*>(data.data()),
                             data.size()) == 1;
  EVP_MD_CTX_free(ctx);
  return ok;
}

Result<Pkey> ReadPem(std::string_view pem, bool private_key) {
  BIO* bio = BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size()));
  EVP_PKEY* key = private_key ? PEM_read_bio_PrivateKey(bio, nullptr, nullptr, nullptr)
                              : PEM_read_bio_PUBKEY(bio, nullptr, nullptr, nullptr);
  BIO_free(bio);
  if (key == nullptr) {
    return Status::InvalidArgument(private_key ? "not a PEM private key"
                                               : "not a PEM public key (\"BEGIN PUBLIC KEY\")");
  }
  return Pkey(key);
}

Result<std::string> JwkBytes(const json& jwk, const char* field) {
  if (!jwk.contains(field) || !jwk[field].is_string()) {
    return Status::InvalidArgument(std::string("JWK without \"") + field + "\"");
  }
  std::optional<std::string> bytes = Base64UrlDecode(jwk[field].get<std::string>());
  if (!bytes) return Status::InvalidArgument(std::string("JWK \"") + field + "\" is not base64url");
  return std::move(*bytes);
}

// A public key from one JWK (RSA, EC P-256, OKP Ed25519).
Result<Pkey> KeyFromJwk(const json& jwk) {
  const std::string kty = StringAt(jwk, "kty");
  if (kty == "OKP" && StringAt(jwk, "crv") == "Ed25519") {
    ASSIGN_OR_RETURN(std::string x, JwkBytes(jwk, "x"));
    EVP_PKEY* key = EVP_PKEY_new_raw_public_key(
        EVP_PKEY_ED25519, nullptr, reinterpret_cast<const unsigned char*>(x.data()), x.size());
    if (key == nullptr) return Status::InvalidArgument("JWK: bad Ed25519 key");
    return Pkey(key);
  }
  OSSL_PARAM_BLD* bld = OSSL_PARAM_BLD_new();
  std::vector<BIGNUM*> bns;
  std::string point;
  const char* type = nullptr;
  if (kty == "RSA") {
    ASSIGN_OR_RETURN(std::string n, JwkBytes(jwk, "n"));
    ASSIGN_OR_RETURN(std::string e, JwkBytes(jwk, "e"));
    for (const std::string* v : {&n, &e}) {
      bns.push_back(BN_bin2bn(reinterpret_cast<const unsigned char*>(v->data()),
                              static_cast<int>(v->size()), nullptr));
    }
    OSSL_PARAM_BLD_push_BN(bld, OSSL_PKEY_PARAM_RSA_N, bns[0]);
    OSSL_PARAM_BLD_push_BN(bld, OSSL_PKEY_PARAM_RSA_E, bns[1]);
    type = "RSA";
  } else if (kty == "EC" && StringAt(jwk, "crv") == "P-256") {
    ASSIGN_OR_RETURN(std::string x, JwkBytes(jwk, "x"));
    ASSIGN_OR_RETURN(std::string y, JwkBytes(jwk, "y"));
    if (x.size() != 32 || y.size() != 32) return Status::InvalidArgument("JWK: bad P-256 point");
    point = "\x04" + x + y;
    OSSL_PARAM_BLD_push_utf8_string(bld, OSSL_PKEY_PARAM_GROUP_NAME, "prime256v1", 0);
    OSSL_PARAM_BLD_push_octet_string(bld, OSSL_PKEY_PARAM_PUB_KEY, point.data(), point.size());
    type = "EC";
  }
  EVP_PKEY* key = nullptr;
  if (type != nullptr) {
    OSSL_PARAM* params = OSSL_PARAM_BLD_to_param(bld);
    EVP_PKEY_CTX* ctx = EVP_PKEY_CTX_new_from_name(nullptr, type, nullptr);
    if (ctx == nullptr || EVP_PKEY_fromdata_init(ctx) != 1 ||
        EVP_PKEY_fromdata(ctx, &key, EVP_PKEY_PUBLIC_KEY, params) != 1) {
      key = nullptr;
    }
    EVP_PKEY_CTX_free(ctx);
    OSSL_PARAM_free(params);
  }
  for (BIGNUM* bn : bns) BN_free(bn);
  OSSL_PARAM_BLD_free(bld);
  if (type == nullptr) {
    return Status::InvalidArgument("JWK type '" + kty +
                                   "' is not supported (RSA, EC P-256, OKP Ed25519)");
  }
  if (key == nullptr) return Status::InvalidArgument("JWK: a malformed " + kty + " key");
  return Pkey(key);
}

}  // namespace

struct JwtVerifier::Key {
  std::string kid;
  std::string alg;     // the one algorithm this key verifies
  std::string secret;  // HS256
  Pkey pkey;           // the others
};

JwtVerifier::JwtVerifier(std::vector<std::unique_ptr<Key>> keys, JwtPolicy policy)
    : keys_(std::move(keys)), policy_(std::move(policy)) {}
JwtVerifier::~JwtVerifier() = default;

Result<std::shared_ptr<JwtVerifier>> JwtVerifier::FromSecret(std::string secret, JwtPolicy policy) {
  if (secret.size() < 32) {
    return Status::InvalidArgument("an HS256 secret must be at least 32 bytes; this one has " +
                                   std::to_string(secret.size()));
  }
  std::vector<std::unique_ptr<Key>> keys;
  keys.push_back(std::make_unique<Key>(Key{"", "HS256", std::move(secret), nullptr}));
  return std::shared_ptr<JwtVerifier>(new JwtVerifier(std::move(keys), std::move(policy)));
}

Result<std::shared_ptr<JwtVerifier>> JwtVerifier::FromPublicKeyPem(std::string_view pem,
                                                                   JwtPolicy policy) {
  ASSIGN_OR_RETURN(Pkey key, ReadPem(pem, /*private_key=*/false));
  std::string alg = AlgorithmOf(key.get());
  if (alg.empty()) {
    return Status::InvalidArgument(
        "the public key is neither RSA of 2048+ bits, EC P-256 nor Ed25519");
  }
  std::vector<std::unique_ptr<Key>> keys;
  keys.push_back(std::make_unique<Key>(Key{"", std::move(alg), "", std::move(key)}));
  return std::shared_ptr<JwtVerifier>(new JwtVerifier(std::move(keys), std::move(policy)));
}

Result<std::shared_ptr<JwtVerifier>> JwtVerifier::FromJwks(std::string_view jwks,
                                                           JwtPolicy policy) {
  json j = ParseJson(jwks);
  if (!j.is_object() || !j.contains("keys") || !j["keys"].is_array() || j["keys"].empty()) {
    return Status::InvalidArgument("a JWKS is {\"keys\":[...]} with at least one key");
  }
  std::vector<std::unique_ptr<Key>> keys;
  for (const json& jwk : j["keys"]) {
    if (!jwk.is_object()) return Status::InvalidArgument("a JWKS key must be an object");
    ASSIGN_OR_RETURN(Pkey key, KeyFromJwk(jwk));
    std::string alg = AlgorithmOf(key.get());
    if (alg.empty()) return Status::InvalidArgument("JWKS: an RSA key under 2048 bits");
    if (jwk.contains("alg") && jwk["alg"] != alg) {
      return Status::InvalidArgument("JWKS: a key declares alg " + jwk["alg"].dump() +
                                     " but is a " + alg + " key");
    }
    keys.push_back(std::make_unique<Key>(Key{StringAt(jwk, "kid"), alg, "", std::move(key)}));
  }
  return std::shared_ptr<JwtVerifier>(new JwtVerifier(std::move(keys), std::move(policy)));
}

Result<JwtClaims> JwtVerifier::Verify(std::string_view token, int64_t now) const {
  if (token.empty()) return Denied("is missing");
  if (token.size() > policy_.max_token_bytes) {
    return Denied("is over " + std::to_string(policy_.max_token_bytes) + " bytes");
  }
  const size_t dot1 = token.find('.');
  const size_t dot2 = dot1 == std::string_view::npos ? dot1 : token.find('.', dot1 + 1);
  if (dot2 == std::string_view::npos || token.find('.', dot2 + 1) != std::string_view::npos) {
    return Denied("is not a compact JWS (header.payload.signature)");
  }
  const std::optional<std::string> header_text = Base64UrlDecode(token.substr(0, dot1));
  const std::optional<std::string> payload =
      Base64UrlDecode(token.substr(dot1 + 1, dot2 - dot1 - 1));
  const std::optional<std::string> sig = Base64UrlDecode(token.substr(dot2 + 1));
  if (!header_text || !payload || !sig) return Denied("is not valid base64url");
  std::string problem;
  json header = ParseJson(*header_text, &problem);
  if (header.is_discarded())
    return Denied("has a header that is not strict JSON (" + problem + ")");
  if (!header.is_object() || !header.contains("alg") || !header["alg"].is_string()) {
    return Denied("has no algorithm in its header");
  }
  if (header.contains("crit")) return Denied("names critical extensions this server does not know");
  const std::string alg = header["alg"].get<std::string>();
  const std::string kid =
      header.contains("kid") && header["kid"].is_string() ? header["kid"].get<std::string>() : "";
  const std::string_view signed_part = token.substr(0, dot2);
  bool any_key = false;
  for (const auto& key : keys_) {
    if (key->alg != alg || (!kid.empty() && !key->kid.empty() && key->kid != kid)) continue;
    any_key = true;
    const bool ok = alg == "HS256" ? ConstantTimeEqual(HmacSha256(key->secret, signed_part), *sig)
                                   : VerifyWithKey(key->pkey.get(), alg, signed_part, *sig);
    if (!ok) continue;
    JwtClaims claims;
    RETURN_NOT_OK(CheckClaims(*payload, now, &claims));
    return claims;
  }
  if (!any_key) return Denied("uses algorithm '" + alg + "', which this server does not accept");
  return Denied("has a signature that does not verify");
}

Status JwtVerifier::CheckClaims(const std::string& payload, int64_t now, JwtClaims* out) const {
  std::string problem;
  json c = ParseJson(payload, &problem);
  if (c.is_discarded()) return Denied("has a payload that is not strict JSON (" + problem + ")");
  if (!c.is_object()) return Denied("has a payload that is not a JSON object");
  const auto time = [&](const char* name) -> std::optional<int64_t> {
    if (!c.contains(name) || !c[name].is_number()) return std::nullopt;
    if (c[name].is_number_integer() && !c[name].is_number_unsigned()) return c[name].get<int64_t>();
    const double v = c[name].get<double>();
    if (!(v > -9e18 && v < 9e18)) return std::nullopt;  // also NaN
    return static_cast<int64_t>(v);
  };
  const std::optional<int64_t> exp = time("exp");
  if (!exp) return Denied("has no numeric exp claim (an expiry is required)");
  if (now > *exp + policy_.leeway_seconds) return Denied("has expired");
  if (c.contains("nbf")) {
    const std::optional<int64_t> nbf = time("nbf");
    if (!nbf) return Denied("has a non-numeric nbf claim");
    if (now + policy_.leeway_seconds < *nbf) return Denied("is not valid yet (nbf)");
  }
  if (!policy_.issuer.empty() && (!c.contains("iss") || c["iss"] != policy_.issuer)) {
    return Denied("has the wrong issuer");
  }
  if (!policy_.audience.empty()) {
    const json aud = c.contains("aud") ? c["aud"] : json();
    const bool match =
        aud == policy_.audience ||
        (aud.is_array() && std::find(aud.begin(), aud.end(), policy_.audience) != aud.end());
    if (!match) return Denied("is for another audience");
  }
  if (!c.contains("sub") || !c["sub"].is_string() || c["sub"].get<std::string>().empty()) {
    return Denied("has no sub claim (the principal)");
  }
  if (Status p = CheckPrincipal(c["sub"].get<std::string>()); !p.ok()) {
    return Denied("has a sub claim that is not a valid principal (" + p.message() + ")");
  }
  if (!c.contains("loam_workspace") || !c["loam_workspace"].is_string()) {
    return Denied("has no loam_workspace claim");
  }
  out->subject = c["sub"].get<std::string>();
  out->workspace = c["loam_workspace"].get<std::string>();
  out->expires = *exp;
  return Status::OK();
}

Result<std::string> SignJwt(std::string_view key, std::string_view payload_json, bool hs256,
                            std::string_view header_extra) {
  Pkey pkey;
  std::string alg = "HS256";
  if (!hs256) {
    ASSIGN_OR_RETURN(pkey, ReadPem(key, /*private_key=*/true));
    alg = AlgorithmOf(pkey.get());
    if (alg.empty()) return Status::InvalidArgument("unsupported private key type");
  }
  json header = {{"alg", alg}, {"typ", "JWT"}};
  if (!header_extra.empty()) header.update(json::parse(header_extra));
  const std::string signing_input =
      Base64UrlEncode(header.dump()) + "." + Base64UrlEncode(payload_json);
  std::string sig;
  if (hs256) {
    sig = HmacSha256(key, signing_input);
  } else {
    EVP_MD_CTX* ctx = EVP_MD_CTX_new();
    size_t len = 0;
    const EVP_MD* md = alg == "EdDSA" ? nullptr : EVP_sha256();
    const auto* data = reinterpret_cast<const unsigned char*>(signing_input.data());
    bool ok = EVP_DigestSignInit(ctx, nullptr, md, nullptr, pkey.get()) == 1 &&
              EVP_DigestSign(ctx, nullptr, &len, data, signing_input.size()) == 1;
    sig.resize(len);
    ok = ok && EVP_DigestSign(ctx, reinterpret_cast<unsigned char*>(sig.data()), &len, data,
                              signing_input.size()) == 1;
    EVP_MD_CTX_free(ctx);
    if (!ok) return Status::Internal("signing failed");
    sig.resize(len);
    if (alg == "ES256") {
      ASSIGN_OR_RETURN(sig, DerToRaw(sig));
    }
  }
  return signing_input + "." + Base64UrlEncode(sig);
}

}  // namespace loam::server
