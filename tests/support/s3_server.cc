#include "support/s3_server.h"

#include <chrono>
#include <ctime>
#include <stdexcept>
#include <thread>

#include "objstore/http.h"
#include "objstore/sigv4.h"

namespace tw::testing {

namespace {

bool Send(const std::string& endpoint, const std::string& method, const std::string& bucket,
          const std::string& key, const std::string& body, std::string* why) {
  objstore::SignInput in;
  in.method = method;
  in.host = endpoint.substr(endpoint.find("://") + 3);
  in.path = "/" + bucket + "/" + objstore::UriEncode(key, true);
  in.amz_date = objstore::AmzDate(std::time(nullptr));
  in.payload_sha256 = objstore::Sha256Hex(body);
  in.region = "us-east-1";
  in.headers = {{"x-amz-date", in.amz_date}, {"x-amz-content-sha256", in.payload_sha256}};
  objstore::HttpRequest req;
  req.method = method;
  req.url = endpoint + in.path;
  req.body = body;
  for (const auto& [k, v] : in.headers) req.headers.push_back(k + ": " + v);
  req.headers.push_back("Authorization: " + objstore::SignV4(in, {"S3RVER", "S3RVER", ""}));
  req.headers.push_back("Content-Type: application/octet-stream");
  Result<objstore::HttpResponse> r = objstore::Exchange(req);
  if (!r.ok()) {
    if (why) *why = r.status().message();
    return false;
  }
  if (r->status / 100 != 2) {
    if (why) *why = "HTTP " + std::to_string(r->status) + ": " + r->body;
    return false;
  }
  return true;
}

}  // namespace

bool NodeAvailable() { return RunCommand("node --version") == 0; }

S3Server::S3Server(std::string bucket) : bucket_(std::move(bucket)) {
  const std::string out = dir_ / "stdout";
  ChildProcess::Options o;
  o.stdout_path = out;
  o.stderr_path = dir_ / "stderr";
  child_ = ChildProcess({"/usr/bin/env", "node", TW_S3_SERVER_JS, dir_ / "data", bucket_}, o);
  const bool up = WaitFor(
      [&] {
        std::string text;
        try {
          text = ReadFile(out);
        } catch (const std::exception&) {
          return false;  // not created yet
        }
        if (text.rfind("port ", 0) != 0 || text.find('\n') == std::string::npos) return false;
        port_ = static_cast<uint16_t>(std::stoi(text.substr(5)));
        return true;
      },
      std::chrono::seconds(20));
  if (!up) {
    std::string why;
    try {
      why = ReadFile(dir_ / "stderr");
    } catch (const std::exception&) {
    }
    throw std::runtime_error("s3rver did not start: " + why);
  }
}

S3Server::~S3Server() { child_.KillAndReap(); }

bool S3Server::Put(const std::string& key, const std::string& bytes, std::string* why) {
  return Send(endpoint(), "PUT", bucket_, key, bytes, why);
}

bool S3Server::Delete(const std::string& key) { return Send(endpoint(), "DELETE", bucket_, key, "", nullptr); }

}  // namespace tw::testing
