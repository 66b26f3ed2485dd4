#include "common/principal.h"

#include <gtest/gtest.h>

#include <string>

namespace loam {
namespace {

TEST(PrincipalTest, PrintableNamesFromRealIdentityProvidersAreValid) {
  for (std::string_view p :
       {"ada", "ada@example.com", "auth0|5f7c8ec7c33c6c004bbafe82",
        "repo:octo-org/octo-repo:environment:prod", "système", "名前", "a b", "x"}) {
    EXPECT_TRUE(CheckPrincipal(p).ok()) << p;
  }
  EXPECT_TRUE(CheckPrincipal(std::string(kMaxPrincipalBytes, 'a')).ok());
}

TEST(PrincipalTest, NamesThatDoNotPrintAsWhatTheyAreAreRefused) {
  const std::pair<std::string, const char*> bad[] = {
      {"", "empty"},
      {std::string(kMaxPrincipalBytes + 1, 'a'), "128 bytes"},
      {"ada\n", "control character at byte 3"},
      {std::string("ada\0", 4), "control character at byte 3"},
      {"ad\ta", "control character at byte 2"},
      {"ada\x7f", "control character"},
      {"ada\xc2\x85", "control character"},      // U+0085 NEXT LINE
      {"ada\xe2\x80\xa8", "control character"},  // U+2028 LINE SEPARATOR
      {"ada\xff", "not valid UTF-8 at byte 3"},
      {" ada", "space"},
      {"ada ", "space"},
      {".", "not names"},
      {"..", "not names"},
  };
  for (const auto& [p, why] : bad) {
    Status s = CheckPrincipal(p);
    EXPECT_TRUE(s.IsInvalidArgument()) << why;
    EXPECT_NE(s.message().find(why), std::string::npos) << s.message();
    EXPECT_NE(s.message().find("printable UTF-8"), std::string::npos) << s.message();
  }
}

}  // namespace
}  // namespace loam
