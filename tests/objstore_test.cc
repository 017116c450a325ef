// The object-store client (src/objstore): SigV4 against AWS's published examples, the
// listing parser and the client against hostile answers (a loopback HttpServer that says what
// a test scripts), retries through a fault proxy in front of a real S3 server (s3rver), the
// read-ahead of an object read as a reader's bytes, and credentials from the environment, a
// profile file and the instance metadata service (v2, on loopback).
#include <gtest/gtest.h>

#include <string>

#include "objstore/credentials.h"
#include "objstore/object_source.h"
#include "objstore/s3_client.h"
#include "objstore/sigv4.h"
#include "read/lines.h"
#include "support/fault_proxy.h"
#include "support/http_server.h"
#include "support/s3_server.h"
#include "support/test_env.h"

namespace tw::objstore {
namespace {

using tw::testing::FaultProxy;
using tw::testing::HttpServer;
using tw::testing::RecordedRequest;
using tw::testing::Reply;

// AWS's examples of header-signed S3 requests ("Signature Calculations for the Authorization
// Header: Transferring Payload in a Single Chunk", Amazon S3 API reference): the example
// credentials, bucket examplebucket, region us-east-1, 2013-05-24 00:00:00 UTC.
const Credentials kExample{"AKIAIOSFODNN7EXAMPLE", "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", ""};
const char* kEmptyHash = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";

SignInput Example(std::string method, std::string path) {
  SignInput in;
  in.method = std::move(method);
  in.host = "examplebucket.s3.amazonaws.com";
  in.path = std::move(path);
  in.amz_date = "20130524T000000Z";
  in.region = "us-east-1";
  in.payload_sha256 = kEmptyHash;
  return in;
}

std::string SignatureOf(const std::string& authorization) {
  return authorization.substr(authorization.rfind('=') + 1);
}

TEST(SigV4, GetObjectWithARange) {
  SignInput in = Example("GET", "/test.txt");
  in.headers = {{"Range", "bytes=0-9"}, {"x-amz-content-sha256", kEmptyHash}, {"x-amz-date", in.amz_date}};
  const std::string auth = SignV4(in, kExample);
  EXPECT_EQ(auth,
            "AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3/aws4_request,"
            "SignedHeaders=host;range;x-amz-content-sha256;x-amz-date,"
            "Signature=f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41");
}

TEST(SigV4, PutObject) {
  SignInput in = Example("PUT", "/test%24file.text");
  in.payload_sha256 = Sha256Hex("Welcome to Amazon S3.");
  EXPECT_EQ(in.payload_sha256, "44ce7dd67c959e0d3524ffac1771dfbba87d2b6b4b4e99e42034a8b803f8b072");
  in.headers = {{"Date", "Fri, 24 May 2013 00:00:00 GMT"},
                {"x-amz-content-sha256", in.payload_sha256},
                {"x-amz-date", in.amz_date},
                {"x-amz-storage-class", "REDUCED_REDUNDANCY"}};
  EXPECT_EQ(SignatureOf(SignV4(in, kExample)), "98ad721746da40c64f1a55b78f14c238d841ea1380cd77a1b5971af0ece108bd");
  EXPECT_EQ(UriEncode("test$file.text", true), "test%24file.text");
}

TEST(SigV4, GetBucketLifecycle) {
  SignInput in = Example("GET", "/");
  in.query = {{"lifecycle", ""}};
  in.headers = {{"x-amz-content-sha256", kEmptyHash}, {"x-amz-date", in.amz_date}};
  EXPECT_EQ(SignatureOf(SignV4(in, kExample)), "fea454ca298b7da1c68078a5d1bdbfbbe0d65c699e0f91ac7a200a0136783543");
}

TEST(SigV4, ListObjectsWithTheQueryInAnyOrder) {
  SignInput in = Example("GET", "/");
  in.query = {{"prefix", "J"}, {"max-keys", "2"}};  // sorted by the signer, as S3 does
  in.headers = {{"x-amz-content-sha256", kEmptyHash}, {"x-amz-date", in.amz_date}};
  EXPECT_EQ(SignatureOf(SignV4(in, kExample)), "34b48302e7b5fa45bde8084f4b7868a86f0a534bc59db6670ed5711ef69dc6f7");
  EXPECT_EQ(CanonicalQuery({{"prefix", "a b/c"}, {"continuation-token", "1+2="}}),
            "continuation-token=1%2B2%3D&prefix=a%20b%2Fc");
}

TEST(S3Url, ParsesBucketAndPrefixAndSaysWhatIsWrong) {
  auto loc = ParseS3Url("s3://my-bucket/team/exp/");
  ASSERT_TRUE(loc.ok()) << loc.status().ToString();
  EXPECT_EQ(loc->bucket, "my-bucket");
  EXPECT_EQ(loc->prefix, "team/exp/");
  EXPECT_EQ(ParseS3Url("s3://my-bucket")->prefix, "");
  EXPECT_NE(ParseS3Url("s3://My_Bucket/x").status().message().find("lower-case"), std::string::npos);
  EXPECT_NE(ParseS3Url("s3://ab/x").status().message().find("3 to 63"), std::string::npos);
  EXPECT_NE(ParseS3Url("s3://bucket/a/../b").status().message().find("'..'"), std::string::npos);
  EXPECT_FALSE(ParseS3Url("/local/dir").ok());
}

TEST(ListPage, ParsesObjectsAndPages) {
  auto page = ParseListPage(
      "<?xml version=\"1.0\"?><ListBucketResult><IsTruncated>true</IsTruncated>"
      "<Contents><Key>exp/run/a&amp;b.tfevents</Key><Size>1234</Size><ETag>&quot;abc&quot;</ETag>"
      "<LastModified>2026-11-27T10:00:00.500Z</LastModified></Contents>"
      "<NextContinuationToken>tok/1</NextContinuationToken></ListBucketResult>");
  ASSERT_TRUE(page.ok()) << page.status().ToString();
  ASSERT_EQ(page->objects.size(), 1u);
  EXPECT_EQ(page->objects[0].key, "exp/run/a&b.tfevents");
  EXPECT_EQ(page->objects[0].size, 1234);
  EXPECT_EQ(page->objects[0].etag, "abc");
  EXPECT_DOUBLE_EQ(page->objects[0].mtime, 1795773600.5);
  EXPECT_TRUE(page->truncated);
  EXPECT_EQ(page->next_token, "tok/1");
}

TEST(ListPage, HostileListingsAreErrorsThatSayWhat) {
  const std::pair<const char*, const char*> cases[] = {
      {"<html>nope</html>", "not a ListBucketResult"},
      {"<ListBucketResult><Contents><Key>a</Key><Size>1</Size>", "never closed"},
      {"<ListBucketResult><Contents><Size>1</Size></Contents></ListBucketResult>", "without a <Key>"},
      {"<ListBucketResult><Contents><Key>a</Key><Size>-1</Size></Contents></ListBucketResult>", "not a byte count"},
      {"<ListBucketResult><Contents><Key>a</Key><Size>99999999999999999999</Size></Contents></ListBucketResult>",
       "not a byte count"},
      {"<ListBucketResult><Contents><Key>a&bogus;</Key><Size>1</Size></Contents></ListBucketResult>", "entity"},
      {"<ListBucketResult><IsTruncated>true</IsTruncated></ListBucketResult>", "NextContinuationToken"},
  };
  for (const auto& [xml, why] : cases) {
    auto page = ParseListPage(xml);
    ASSERT_FALSE(page.ok()) << xml;
    EXPECT_NE(page.status().message().find(why), std::string::npos) << xml << " -> " << page.status().ToString();
  }
}

S3Settings LocalSettings(const std::string& endpoint) {
  S3Settings s;
  s.endpoint = endpoint;
  s.path_style = true;
  s.timeout_seconds = 5;
  s.backoff_seconds = 0.01;
  s.credentials.imds_endpoint = "";
  return s;
}

Getenv Vars(std::map<std::string, std::string> vars) {
  return [vars](const std::string& k) -> std::optional<std::string> {
    auto it = vars.find(k);
    if (it == vars.end()) return std::nullopt;
    return it->second;
  };
}

const Getenv kS3rverKeys = Vars({{"AWS_ACCESS_KEY_ID", "S3RVER"}, {"AWS_SECRET_ACCESS_KEY", "S3RVER"}});

TEST(S3Client, HostileAnswersAreErrorsNamingTheObject) {
  HttpServer server;
  S3Client client(LocalSettings("http://127.0.0.1:" + std::to_string(server.port())), kS3rverKeys);
  // A Content-Range that is not the range asked for.
  server.Script({Reply{206, "0123456789", {{"Content-Range", "bytes 5-14/100"}, {"ETag", "\"e\""}}}});
  auto r = client.Get("logs", "exp/run/events", 0, 10);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("s3://logs/exp/run/events"), std::string::npos) << r.status().ToString();
  EXPECT_NE(r.status().message().find("bytes 5-14/100"), std::string::npos) << r.status().ToString();
  // Fewer bytes than the Content-Range announces.
  server.Script({Reply{206, "0123", {{"Content-Range", "bytes 0-9/100"}}}});
  r = client.Get("logs", "k", 0, 10);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("announces 10 bytes, 4 came"), std::string::npos) << r.status().ToString();
  // More bytes than it announces; far more than asked for: cut off, not buffered.
  server.Script({Reply{206, std::string(5000, 'x'), {{"Content-Range", "bytes 0-9/100"}}}});
  r = client.Get("logs", "k", 0, 10);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("announces 10 bytes, 5000 came"), std::string::npos) << r.status().ToString();
  server.Script({Reply{206, std::string(1 << 20, 'x'), {{"Content-Range", "bytes 0-9/100"}}}});
  r = client.Get("logs", "k", 0, 10);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("the answer is longer than 65546 bytes; not read"), std::string::npos)
      << r.status().ToString();
  // A redirect is not followed, and says what to set.
  server.Script({Reply{301, "<Error><Code>PermanentRedirect</Code></Error>",
                       {{"Location", "http://elsewhere/"}, {"x-amz-bucket-region", "eu-west-1"}}}});
  auto l = client.List({"logs", "exp/"});
  ASSERT_FALSE(l.ok());
  EXPECT_NE(l.status().message().find("redirected (HTTP 301) to region eu-west-1"), std::string::npos)
      << l.status().ToString();
  // Garbage where a listing should be.
  server.Script({Reply{200, "{\"json\": true}"}});
  l = client.List({"logs", "exp/"});
  ASSERT_FALSE(l.ok());
  EXPECT_NE(l.status().message().find("listing s3://logs/exp/: the answer is not a listing"), std::string::npos)
      << l.status().ToString();
  // A server that gives the same page forever.
  const std::string loop =
      "<ListBucketResult><IsTruncated>true</IsTruncated><NextContinuationToken>t</NextContinuationToken>"
      "</ListBucketResult>";
  server.Script({Reply{200, loop}, Reply{200, loop}});
  l = client.List({"logs", "exp/"});
  ASSERT_FALSE(l.ok());
  EXPECT_NE(l.status().message().find("same continuation token twice"), std::string::npos) << l.status().ToString();
  // Keys that no path can hold, and keys outside the prefix, are left out and named.
  server.Script({Reply{200,
                       "<ListBucketResult><Contents><Key>exp/a//b.csv</Key><Size>1</Size></Contents>"
                       "<Contents><Key>exp/../etc/metrics.csv</Key><Size>1</Size></Contents>"
                       "<Contents><Key>other/metrics.csv</Key><Size>1</Size></Contents>"
                       "<Contents><Key>exp/run/metrics.csv</Key><Size>1</Size></Contents></ListBucketResult>"}});
  l = client.List({"logs", "exp/"});
  ASSERT_TRUE(l.ok()) << l.status().ToString();
  ASSERT_EQ(l->objects.size(), 1u);
  EXPECT_EQ(l->objects[0].key, "exp/run/metrics.csv");
  EXPECT_EQ(l->skipped.size(), 3u);
  // The requests were signed, with the date and the payload hash.
  const RecordedRequest last = server.requests().back();
  EXPECT_EQ(last.headers.at("authorization").rfind("AWS4-HMAC-SHA256 Credential=S3RVER/", 0), 0u);
  EXPECT_EQ(last.headers.at("x-amz-content-sha256"), kEmptyHash);
  EXPECT_EQ(last.target, "/logs?list-type=2&prefix=exp%2F");
}

TEST(S3Client, AccessDeniedIsNotRetriedAndLooksTheCredentialsUpAgain) {
  HttpServer server;
  S3Client client(LocalSettings("http://127.0.0.1:" + std::to_string(server.port())), kS3rverKeys);
  server.Script({Reply{403, "<Error><Code>SignatureDoesNotMatch</Code><Message>no\x01</Message></Error>"}});
  auto l = client.List({"logs", ""});
  ASSERT_FALSE(l.ok());
  EXPECT_EQ(l.status().message(), "listing s3://logs/: access denied (HTTP 403 SignatureDoesNotMatch: no )");
  EXPECT_EQ(server.requests().size(), 1u);
}

// Retries against the real server behind the fault proxy.
class S3Faults : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!tw::testing::NodeAvailable()) GTEST_SKIP() << "node is not installed";
    s3_ = std::make_unique<tw::testing::S3Server>();
    proxy_ = std::make_unique<FaultProxy>(s3_->port());
    ASSERT_TRUE(s3_->Put("exp/run/metrics.csv", body_));
  }
  std::string body_ = std::string("step,loss\n") + std::string(300000, '1');
  std::unique_ptr<tw::testing::S3Server> s3_;
  std::unique_ptr<FaultProxy> proxy_;
};

TEST_F(S3Faults, SlowDownAndResetsAreRetriedWithBackoff) {
  S3Client client(LocalSettings(proxy_->endpoint()), kS3rverKeys);
  std::vector<double> slept;
  client.SetSleep([&](double s) { slept.push_back(s); });
  proxy_->Arm(FaultProxy::Fault::kSlowDown, 2, "list-type=2");
  auto l = client.List({"logs", "exp/"});
  ASSERT_TRUE(l.ok()) << l.status().ToString();
  ASSERT_EQ(l->objects.size(), 1u);
  EXPECT_EQ(l->objects[0].size, static_cast<int64_t>(body_.size()));
  EXPECT_EQ(slept, (std::vector<double>{0.01, 0.02}));
  proxy_->Arm(FaultProxy::Fault::kReset, 1, "range:");
  proxy_->Arm(FaultProxy::Fault::kResetMidBody, 1, "range:");
  auto r = client.Get("logs", "exp/run/metrics.csv", 5, 100000);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->bytes, body_.substr(5, 100000));
  EXPECT_EQ(r->total, static_cast<int64_t>(body_.size()));
  EXPECT_EQ(r->etag, l->objects[0].etag);
  EXPECT_EQ(proxy_->faults_done(), 4);
  // Past the end (the object shrank): no bytes, no error.
  r = client.Get("logs", "exp/run/metrics.csv", body_.size() + 10, 10);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_TRUE(r->bytes.empty());
  // A server that keeps slowing down: given up on after max_attempts, saying why.
  proxy_->Arm(FaultProxy::Fault::kSlowDown, 100, "range:");
  r = client.Get("logs", "exp/run/metrics.csv", 0, 10);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(),
            "s3://logs/exp/run/metrics.csv: gave up after 5 attempts; the last: HTTP 503 SlowDown: Please reduce your "
            "request rate.");
}

TEST_F(S3Faults, WrongCredentialsAreRefusedByTheServer) {
  S3Client wrong_secret(LocalSettings(s3_->endpoint()),
                        Vars({{"AWS_ACCESS_KEY_ID", "S3RVER"}, {"AWS_SECRET_ACCESS_KEY", "not-it"}}));
  auto l = wrong_secret.List({"logs", "exp/"});
  ASSERT_FALSE(l.ok());
  EXPECT_NE(l.status().message().find("listing s3://logs/exp/: access denied (HTTP 403 SignatureDoesNotMatch"),
            std::string::npos)
      << l.status().ToString();
  EXPECT_EQ(l.status().message().find("not-it"), std::string::npos);
  S3Client wrong_key(LocalSettings(s3_->endpoint()),
                     Vars({{"AWS_ACCESS_KEY_ID", "AKIDNOTHERE"}, {"AWS_SECRET_ACCESS_KEY", "S3RVER"}}));
  l = wrong_key.List({"logs", "exp/"});
  ASSERT_FALSE(l.ok());
  EXPECT_NE(l.status().message().find("HTTP 403 InvalidAccessKeyId"), std::string::npos) << l.status().ToString();
  // Keys, query and path that need encoding are signed as the server computes them.
  ASSERT_TRUE(s3_->Put("exp/odd name+(1)/metrics.csv", "step,loss\n"));
  S3Client right(LocalSettings(s3_->endpoint()), kS3rverKeys);
  auto odd = right.List({"logs", "exp/odd name+(1)/"});
  ASSERT_TRUE(odd.ok()) << odd.status().ToString();
  ASSERT_EQ(odd->objects.size(), 1u);
  auto r = right.Get("logs", "exp/odd name+(1)/metrics.csv", 0, 100);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->bytes, "step,loss\n");
}

TEST_F(S3Faults, AnObjectIsReadWithFewRequestsAndStopsWhereItWasReplaced) {
  S3Client client(LocalSettings(proxy_->endpoint()), kS3rverKeys);
  auto l = client.List({"logs", "exp/"});
  ASSERT_TRUE(l.ok());
  const int before = proxy_->requests();
  ObjectSource src(client, "logs", l->objects[0]);
  // The reader's small reads (a head, a tail fingerprint, lines) come from one read-ahead.
  read::LineReader reader("s3://logs/exp/run/metrics.csv", 0, {});
  reader.Use(src);
  ASSERT_TRUE(reader.Open().ok());
  int lines = 0;
  while (reader.Next() == read::LineReader::Step::kRecord) ++lines;
  EXPECT_TRUE(reader.status().ok()) << reader.status().ToString();
  EXPECT_EQ(lines, 1);  // the header; the long line waits for its newline
  EXPECT_EQ(proxy_->requests() - before, 1) << ::testing::PrintToString(proxy_->lines());
  EXPECT_EQ(src.requests(), 1);
  // Uploaded again meanwhile: a GET that meets the new version ends the read, quietly.
  ASSERT_TRUE(s3_->Put("exp/run/metrics.csv", body_ + "2\n"));
  ObjectSource stale(client, "logs", l->objects[0]);
  char buf[16];
  auto n = stale.ReadAt(buf, sizeof buf, 0);
  ASSERT_TRUE(n.ok()) << n.status().ToString();
  EXPECT_EQ(*n, 0u);
  EXPECT_TRUE(stale.changed());
}

// ---------------------------------------------------------------------------------------------
// Credentials

TEST(Credentials, FromTheEnvironment) {
  auto c = FromEnvironment(Vars({{"AWS_ACCESS_KEY_ID", "AKID"}, {"AWS_SECRET_ACCESS_KEY", "SECRET"},
                                 {"AWS_SESSION_TOKEN", "TOKEN"}}));
  ASSERT_TRUE(c.ok() && *c);
  EXPECT_EQ((*c)->access_key_id, "AKID");
  EXPECT_EQ((*c)->session_token, "TOKEN");
  EXPECT_FALSE(FromEnvironment(Vars({}))->has_value());
  auto half = FromEnvironment(Vars({{"AWS_ACCESS_KEY_ID", "AKID"}}));
  ASSERT_FALSE(half.ok());
  EXPECT_EQ(half.status().message(), "the environment sets AWS_ACCESS_KEY_ID without AWS_SECRET_ACCESS_KEY");
}

TEST(Credentials, FromAProfileOfTheSharedFile) {
  tw::testing::TempDir dir;
  const std::string file = dir / "credentials";
  tw::testing::WriteFile(file,
                         "# comment\n[default]\naws_access_key_id = DEF\naws_secret_access_key = DEFSECRET\n\n"
                         "[work]\naws_access_key_id=WORK\naws_secret_access_key=WORKSECRET\naws_session_token = T\n");
  auto c = FromProfile(file, "work", true);
  ASSERT_TRUE(c.ok() && *c) << c.status().ToString();
  EXPECT_EQ((*c)->access_key_id, "WORK");
  EXPECT_EQ((*c)->secret_access_key, "WORKSECRET");
  EXPECT_EQ((*c)->session_token, "T");
  EXPECT_EQ(FromProfile(file, "nope", true).status().message(), file + ": no profile [nope]");
  EXPECT_FALSE(FromProfile(file, "nope", false)->has_value());
  EXPECT_FALSE(FromProfile(dir / "missing", "default", false)->has_value());
  tw::testing::WriteFile(file, "[default]\naws_access_key_id\n");
  EXPECT_EQ(FromProfile(file, "default", false).status().message(),
            file + ":2: expected KEY = VALUE in profile default");
  // The chain: AWS_PROFILE and AWS_SHARED_CREDENTIALS_FILE name them; the environment's keys win.
  tw::testing::WriteFile(file, "[work]\naws_access_key_id=WORK\naws_secret_access_key=WORKSECRET\n");
  CredentialSettings settings;
  settings.imds_endpoint = "";
  std::string source;
  CredentialChain chain(settings, Vars({{"AWS_PROFILE", "work"}, {"AWS_SHARED_CREDENTIALS_FILE", file}}));
  auto got = chain.Get(&source);
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  EXPECT_EQ(got->access_key_id, "WORK");
  EXPECT_EQ(source, "profile work of " + file);
  CredentialChain env_first(settings, Vars({{"AWS_PROFILE", "work"}, {"AWS_SHARED_CREDENTIALS_FILE", file},
                                            {"AWS_ACCESS_KEY_ID", "ENV"}, {"AWS_SECRET_ACCESS_KEY", "S"}}));
  EXPECT_EQ(env_first.Get(&source)->access_key_id, "ENV");
  EXPECT_EQ(source, "environment");
  CredentialChain none(settings, Vars({{"HOME", dir.path()}}));
  EXPECT_EQ(none.Get().status().message(),
            "no credentials: none in the environment (AWS_ACCESS_KEY_ID) and no profile");
}

TEST(Credentials, FromTheInstanceMetadataServiceVersion2) {
  HttpServer imds;
  imds.SetResponder([](const RecordedRequest& r) -> std::optional<Reply> {
    if (r.method == "PUT" && r.target == "/latest/api/token") {
      if (!r.headers.count("x-aws-ec2-metadata-token-ttl-seconds")) return Reply{400, "ttl?"};
      return Reply{200, "TOKEN123"};
    }
    auto t = r.headers.find("x-aws-ec2-metadata-token");
    if (t == r.headers.end() || t->second != "TOKEN123") return Reply{401, "no token"};
    if (r.target == "/latest/meta-data/iam/security-credentials/") return Reply{200, "trainer-role\n"};
    if (r.target == "/latest/meta-data/iam/security-credentials/trainer-role")
      return Reply{200,
                   "{\"Code\":\"Success\",\"AccessKeyId\":\"ASIAROLE\",\"SecretAccessKey\":\"ROLESECRET\","
                   "\"Token\":\"SESSION\",\"Expiration\":\"2099-01-01T00:00:00Z\"}"};
    return Reply{404, "?"};
  });
  CredentialSettings settings;
  settings.imds_endpoint = "http://127.0.0.1:" + std::to_string(imds.port());
  tw::testing::TempDir home;
  CredentialChain chain(settings, Vars({{"HOME", home.path()}}));
  std::string source;
  auto c = chain.Get(&source);
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->access_key_id, "ASIAROLE");
  EXPECT_EQ(c->secret_access_key, "ROLESECRET");
  EXPECT_EQ(c->session_token, "SESSION");
  EXPECT_EQ(source, "instance metadata");
  EXPECT_EQ(imds.requests().size(), 3u);
  // Kept until near their expiry: no second round trip.
  ASSERT_TRUE(chain.Get().ok());
  EXPECT_EQ(imds.requests().size(), 3u);
  // Credentials that are about to expire are fetched again.
  HttpServer expiring;
  expiring.SetResponder([](const RecordedRequest& r) -> std::optional<Reply> {
    if (r.method == "PUT") return Reply{200, "T"};
    if (r.target.ends_with("/")) return Reply{200, "role"};
    return Reply{200, "{\"AccessKeyId\":\"A\",\"SecretAccessKey\":\"S\",\"Expiration\":\"2000-01-01T00:00:00Z\"}"};
  });
  settings.imds_endpoint = "http://127.0.0.1:" + std::to_string(expiring.port());
  CredentialChain soon(settings, Vars({{"HOME", home.path()}}));
  ASSERT_TRUE(soon.Get().ok());
  ASSERT_TRUE(soon.Get().ok());
  EXPECT_EQ(expiring.requests().size(), 6u);
  // A service that answers garbage: an error that names it, and no secret.
  HttpServer bad;
  bad.SetResponder([](const RecordedRequest& r) -> std::optional<Reply> {
    if (r.method == "PUT") return Reply{200, "T"};
    if (r.target.ends_with("/")) return Reply{200, "role"};
    return Reply{200, "{\"SecretAccessKey\": \"LEAK\"}"};
  });
  settings.imds_endpoint = "http://127.0.0.1:" + std::to_string(bad.port());
  CredentialChain broken(settings, Vars({{"HOME", home.path()}}));
  auto e = broken.Get();
  ASSERT_FALSE(e.ok());
  EXPECT_NE(e.status().message().find("role role's credentials are not a JSON object with AccessKeyId"),
            std::string::npos)
      << e.status().ToString();
  EXPECT_EQ(e.status().message().find("LEAK"), std::string::npos);
}

}  // namespace
}  // namespace tw::objstore
