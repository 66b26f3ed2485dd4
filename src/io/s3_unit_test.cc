// S3 backend pieces that need no server: URI options, XML, dates, errors.
// The backend itself is tested against Ceph RGW (s3_conformance_test.cc).
#include <gtest/gtest.h>
#include <stdlib.h>

#include "io/counting_object_store.h"
#include "io/fault_injection_object_store.h"
#include "io/memory_object_store.h"
#include "io/s3_object_store.h"
#include "io/s3_xml.h"

namespace loam {
namespace {

TEST(S3Options, FromUriWithOptionsAndEnvironment) {
  ::setenv("AWS_ACCESS_KEY_ID", "ak", 1);
  ::setenv("AWS_SECRET_ACCESS_KEY", "sk", 1);
  ::setenv("AWS_REGION", "eu-west-1", 1);
  ::unsetenv("AWS_ENDPOINT_URL");
  S3Options aws = S3Options::FromUri("s3://bucket/some/prefix/").value();
  EXPECT_EQ(aws.bucket, "bucket");
  EXPECT_EQ(aws.prefix, "some/prefix");
  EXPECT_EQ(aws.region, "eu-west-1");
  EXPECT_EQ(aws.credentials.access_key_id, "ak");
  EXPECT_FALSE(aws.path_style);  // AWS itself: virtual-host addressing
  EXPECT_EQ(aws.if_match, IfMatchForm::kDetect);

  S3Options rgw =
      S3Options::FromUri("s3://b?endpoint=http://127.0.0.1:7480&if_match=unquoted&region=x")
          .value();
  EXPECT_EQ(rgw.prefix, "");
  EXPECT_EQ(rgw.endpoint, "http://127.0.0.1:7480");
  EXPECT_TRUE(rgw.path_style);  // explicit endpoints default to path-style
  EXPECT_EQ(rgw.if_match, IfMatchForm::kUnquoted);
  EXPECT_EQ(rgw.region, "x");
  EXPECT_FALSE(
      S3Options::FromUri("s3://b?endpoint=http://h&addressing=virtual").value().path_style);

  Status bad = S3Options::FromUri("s3://b?colour=blue").status();
  EXPECT_TRUE(bad.IsInvalidArgument());
  EXPECT_NE(bad.message().find("unknown option 'colour=blue'"), std::string::npos) << bad;
  EXPECT_TRUE(S3Options::FromUri("s3:///nobucket").status().IsInvalidArgument());
  EXPECT_TRUE(S3Options::FromUri("s3://b/a//b").status().IsInvalidArgument());
  ::unsetenv("AWS_ACCESS_KEY_ID");
  Status no_creds = OpenObjectStore("s3://b").status();
  EXPECT_NE(no_creds.message().find("AWS_ACCESS_KEY_ID"), std::string::npos) << no_creds;
  ::unsetenv("AWS_SECRET_ACCESS_KEY");
  ::unsetenv("AWS_REGION");
}

TEST(S3Xml, AListingWithNamespacesEntitiesAndCdata) {
  const std::string list =
      "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
      "<ListBucketResult xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\">"
      "<Name>b</Name><IsTruncated>true</IsTruncated>"
      "<Contents><Key>a&amp;b/&lt;c&gt;</Key><Size>5</Size><ETag>&quot;abc&quot;</ETag>"
      "<LastModified>2026-11-30T04:10:00.250Z</LastModified></Contents>"
      "<s3:Contents xmlns:s3=\"http://s3.amazonaws.com/doc/2006-03-01/\">"
      "<s3:Key>caf&#233;/&#x1F642;</s3:Key><s3:Size>0</s3:Size></s3:Contents>"
      "<Contents><Key><![CDATA[x<&>y]]></Key><Size>18446744073709551615</Size></Contents>"
      "</ListBucketResult>";
  s3::ListObjectsResult r = s3::ParseListObjects(list, "list").value();
  EXPECT_TRUE(r.truncated);
  ASSERT_EQ(r.objects.size(), 3u);
  EXPECT_EQ(r.objects[0].key, "a&b/<c>");
  EXPECT_EQ(r.objects[0].size, 5u);
  EXPECT_EQ(r.objects[0].etag, "\"abc\"");
  EXPECT_EQ(r.objects[0].mtime_micros, 1796011800250000);
  EXPECT_EQ(r.objects[1].key, "café/🙂");
  EXPECT_EQ(r.objects[2].key, "x<&>y");
  EXPECT_EQ(r.objects[2].size, UINT64_MAX);
}

// Keys asked for URL-encoded come back decoded; a broken escape is an error.
TEST(S3Xml, AUrlEncodedListingIsDecoded) {
  const std::string list =
      "<ListBucketResult><EncodingType>url</EncodingType><IsTruncated>false</IsTruncated>"
      "<Contents><Key>a+b%2Bc%25%01%E4%B8%96</Key><Size>1</Size></Contents></ListBucketResult>";
  EXPECT_EQ(s3::ParseListObjects(list, "list").value().objects.at(0).key, "a b+c%\x01\xe4\xb8\x96");
  for (const std::string key : {"a%2", "a%zz", "%"}) {
    const std::string bad =
        "<ListBucketResult><EncodingType>url</EncodingType><IsTruncated>false"
        "</IsTruncated><Contents><Key>" +
        key + "</Key><Size>1</Size></Contents></ListBucketResult>";
    EXPECT_TRUE(s3::ParseListObjects(bad, "list").status().IsUnavailable()) << key;
  }
}

// A cut or mangled body is an error, never a short page that looks final.
TEST(S3Xml, ATruncatedOrMalformedListingIsAnError) {
  const std::string list =
      "<ListBucketResult><IsTruncated>false</IsTruncated>"
      "<Contents><Key>k</Key><Size>1</Size></Contents></ListBucketResult>";
  ASSERT_TRUE(s3::ParseListObjects(list, "list").ok());
  for (size_t cut = 0; cut < list.size(); ++cut) {
    Status s = s3::ParseListObjects(list.substr(0, cut), "list 'p/'").status();
    EXPECT_TRUE(s.IsUnavailable()) << cut << ": " << s;
  }
  Status s = s3::ParseListObjects(list.substr(0, 60), "list 'p/'").status();
  EXPECT_NE(s.message().find("s3 list 'p/': unreadable answer"), std::string::npos) << s;
  for (const std::string bad : {
           "<ListBucketResult><Contents><Key>k</Key><Size>1</Size></Contents></ListBucketResult>",
           "<ListBucketResult><IsTruncated>maybe</IsTruncated></ListBucketResult>",
           "<ListBucketResult><IsTruncated>false</IsTruncated><Contents><Size>1</Size>"
           "</Contents></ListBucketResult>",
           "<ListBucketResult><IsTruncated>false</IsTruncated><Contents><Key>k</Key>"
           "<Size>-1</Size></Contents></ListBucketResult>",
           "<ListBucketResult><IsTruncated>false</IsTruncated><Contents><Key>k</Key>"
           "<Size>18446744073709551616</Size></Contents></ListBucketResult>",
           "<Error><Code>SlowDown</Code></Error>",
           "<ListBucketResult><IsTruncated>false</IsTruncated></ListBucketResult><x/>",
           "<ListBucketResult><IsTruncated>false</IsTruncated></ListBucketResult&>",
           "<!DOCTYPE x [<!ENTITY a \"aaaa\">]><ListBucketResult><IsTruncated>false"
           "</IsTruncated><Contents><Key>&a;</Key><Size>1</Size></Contents></ListBucketResult>",
           "<ListBucketResult><IsTruncated>false</IsTruncated><Contents><Key>&nope;</Key>"
           "<Size>1</Size></Contents></ListBucketResult>",
           "",
       }) {
    Status st = s3::ParseListObjects(bad, "list").status();
    EXPECT_TRUE(st.IsUnavailable()) << bad << ": " << st;
  }
  std::string deep;
  for (int i = 0; i < s3::kMaxXmlDepth + 1; ++i) deep += "<a>";
  Status st = s3::ParseXml(deep, "list").status();
  EXPECT_NE(st.message().find("nested deeper than"), std::string::npos) << st;
}

TEST(S3Xml, ErrorsUploadsAndDates) {
  s3::S3Error e = s3::ParseError(
      "<?xml version=\"1.0\"?><Error><Code>NoSuchKey</Code><Message>a &lt;b&gt;</Message>"
      "</Error>");
  EXPECT_EQ(e.code, "NoSuchKey");
  EXPECT_EQ(e.message, "a <b>");
  EXPECT_EQ(s3::ParseError("<html><body>502 Bad Gateway</body></html>").code, "");
  EXPECT_EQ(s3::ParseError("<Error><Code>Cut").code, "");
  EXPECT_EQ(s3::ParseUploadId("<InitiateMultipartUploadResult><Bucket>b</Bucket>"
                              "<UploadId>2~xyz</UploadId></InitiateMultipartUploadResult>",
                              "create")
                .value(),
            "2~xyz");
  EXPECT_TRUE(
      s3::ParseUploadId("<InitiateMultipartUploadResult/>", "create").status().IsUnavailable());
  EXPECT_EQ(s3::ParseCompletedEtag("<CompleteMultipartUploadResult><ETag>&quot;e-2&quot;</ETag>"
                                   "</CompleteMultipartUploadResult>",
                                   "complete")
                .value(),
            "\"e-2\"");
  EXPECT_EQ(s3::ParseCompletedEtag("<CompleteMultipartUploadResult><ETag></ETag>"
                                   "</CompleteMultipartUploadResult>",
                                   "complete")
                .value(),
            "");  // Ceph RGW 16's first completion
  Status late =
      s3::ParseCompletedEtag(
          "<Error><Code>InternalError</Code><Message>try again</Message></Error>", "complete")
          .status();
  EXPECT_TRUE(late.IsUnavailable()) << late;
  EXPECT_NE(late.message().find("InternalError: try again"), std::string::npos) << late;
  EXPECT_EQ(s3::ParseIso8601Micros("2026-11-30T04:10:00.250Z"), 1796011800250000);
  EXPECT_EQ(s3::ParseIso8601Micros("1970-01-01T00:00:00Z"), 0);
  EXPECT_EQ(s3::ParseIso8601Micros("2024-02-29T23:59:59Z"), 1709251199000000);
  EXPECT_EQ(s3::ParseIso8601Micros("2026-02-29T00:00:00Z"), 0);
  EXPECT_EQ(s3::ParseIso8601Micros("2026-11-30"), 0);
  EXPECT_EQ(s3::ParseHttpDateMicros("Mon, 30 Nov 2026 04:10:00 GMT"), 1796011800000000);
  EXPECT_EQ(s3::ParseHttpDateMicros("Mon, 30 Nvv 2026 04:10:00 GMT"), 0);
  EXPECT_EQ(s3::ParseHttpDateMicros("garbage"), 0);
  EXPECT_EQ(s3::XmlEscape("\"a\"&<b>"), "&quot;a&quot;&amp;&lt;b&gt;");
}

TEST(S3ObjectStore, UnreachableEndpointIsUnavailableAfterRetries) {
  S3Options o;
  o.endpoint = "http://127.0.0.1:1";  // nothing listens on port 1
  o.bucket = "b";
  o.credentials = {"ak", "sk", ""};
  o.max_attempts = 2;
  o.backoff_base_ms = 1;
  auto store = S3ObjectStore::Open(o).value();
  Status s = store->Head("k").status();
  EXPECT_TRUE(s.IsUnavailable()) << s;
  EXPECT_NE(s.message().find("127.0.0.1:1"), std::string::npos) << s;
  EXPECT_TRUE(store->Put("a//b", "x").status().IsInvalidArgument());  // checked before any I/O
}

TEST(S3ObjectStore, PresignedUrlShape) {
  S3Options o;
  o.endpoint = "http://127.0.0.1:7480";
  o.bucket = "bkt";
  o.prefix = "ws";
  o.credentials = {"ak", "sk", ""};
  auto store = S3ObjectStore::Open(o).value();
  const std::string url = store->PresignUrl("PUT", "a b/c", 60, "md5==", 1369353600).value();
  EXPECT_EQ(url.rfind("http://127.0.0.1:7480/bkt/ws/a%20b/c?X-Amz-Algorithm=AWS4-HMAC-SHA256", 0),
            0u)
      << url;
  EXPECT_NE(url.find("X-Amz-Expires=60"), std::string::npos);
  EXPECT_NE(url.find("X-Amz-SignedHeaders=content-md5%3Bhost"), std::string::npos) << url;
  EXPECT_TRUE(store->PresignUrl("DELETE", "k", 60).status().IsInvalidArgument());
  EXPECT_TRUE(store->PresignUrl("GET", "k", 0).status().IsInvalidArgument());
}

// Presigning is part of the ObjectStore interface: a wrapped S3 store
// (counted, with faults) presigns as the store itself does, and a store
// that cannot sign says so.
TEST(S3ObjectStore, AWrappedStorePresignsThroughTheInterface) {
  S3Options o;
  o.endpoint = "http://127.0.0.1:7480";
  o.bucket = "bkt";
  o.credentials = {"ak", "sk", ""};
  std::shared_ptr<ObjectStore> s3 = S3ObjectStore::Open(o).value();
  auto wrapped =
      std::make_shared<FaultInjectionObjectStore>(std::make_shared<CountingObjectStore>(s3));
  ASSERT_TRUE(wrapped->CanPresign());
  const std::string url = wrapped->PresignPut("k/x", 60, {{"content-length", "3"}}).value();
  EXPECT_EQ(url.rfind("http://127.0.0.1:7480/bkt/k/x?X-Amz-Algorithm=AWS4-HMAC-SHA256", 0), 0u)
      << url;
  EXPECT_NE(url.find("X-Amz-SignedHeaders=content-length%3Bhost"), std::string::npos) << url;
  auto memory = std::make_shared<CountingObjectStore>(std::make_shared<MemoryObjectStore>());
  EXPECT_FALSE(memory->CanPresign());
  Status s = memory->PresignPut("k", 60, {}).status();
  EXPECT_EQ(s.code(), StatusCode::kUnimplemented) << s;
  EXPECT_NE(s.message().find("only an S3 workspace signs upload URLs"), std::string::npos) << s;
}

}  // namespace
}  // namespace loam
