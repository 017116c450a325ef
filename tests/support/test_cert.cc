#include "support/test_cert.h"

#include <openssl/pem.h>
#include <openssl/x509v3.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <stdexcept>

namespace tw::testing {
namespace {

void Check(bool ok, const char* what) {
  if (!ok) throw std::runtime_error(std::string("test TLS certificate: ") + what);
}

void AddExtension(X509* cert, int nid, const std::string& value) {
  X509V3_CTX ctx;
  X509V3_set_ctx_nodb(&ctx);
  X509V3_set_ctx(&ctx, cert, cert, nullptr, nullptr, 0);
  X509_EXTENSION* ext = X509V3_EXT_conf_nid(nullptr, &ctx, nid, value.c_str());
  Check(ext != nullptr, "extension");
  Check(X509_add_ext(cert, ext, -1) == 1, "add extension");
  X509_EXTENSION_free(ext);
}

// Writes a PEM file (mkstemp: mode 0600) with `write`; returns its path.
template <typename Write>
std::string WritePem(const char* prefix, Write write) {
  const char* dir = std::getenv("TMPDIR");
  std::string path = std::string(dir && *dir ? dir : "/tmp") + "/" + prefix + "-XXXXXX";
  int fd = ::mkstemp(path.data());
  Check(fd >= 0, "mkstemp");
  FILE* f = ::fdopen(fd, "w");
  Check(f != nullptr, "fdopen");
  bool ok = write(f);
  ok = std::fclose(f) == 0 && ok;
  Check(ok, "write PEM");
  return path;
}

}  // namespace

// Valid from an hour ago for a day.
TestCertificate::TestCertificate(const std::string& san, const std::string& cn) {
  key_.reset(EVP_EC_gen("P-256"));
  Check(key_ != nullptr, "key");
  cert_.reset(X509_new());
  Check(cert_ != nullptr, "X509_new");
  X509* cert = cert_.get();
  X509_set_version(cert, 2);  // v3
  ASN1_INTEGER_set(X509_get_serialNumber(cert), static_cast<long>(::getpid()) ^ std::rand());
  X509_gmtime_adj(X509_getm_notBefore(cert), -3600);
  X509_gmtime_adj(X509_getm_notAfter(cert), 86400);
  Check(X509_set_pubkey(cert, key_.get()) == 1, "public key");
  X509_NAME* name = X509_get_subject_name(cert);
  X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC, reinterpret_cast<const unsigned char*>(cn.c_str()),
                             -1, -1, 0);
  X509_set_issuer_name(cert, name);
  AddExtension(cert, NID_basic_constraints, "critical,CA:TRUE");
  AddExtension(cert, NID_key_usage, "critical,digitalSignature,keyCertSign");
  AddExtension(cert, NID_subject_key_identifier, "hash");
  AddExtension(cert, NID_subject_alt_name, san);
  Check(X509_sign(cert, key_.get(), EVP_sha256()) > 0, "sign");
  cert_file_ = WritePem("tw-test-ca", [&](FILE* f) { return PEM_write_X509(f, cert) == 1; });
  key_file_ = WritePem("tw-test-key", [&](FILE* f) {
    return PEM_write_PrivateKey(f, key_.get(), nullptr, nullptr, 0, nullptr, nullptr) == 1;
  });
}

TestCertificate::~TestCertificate() {
  ::unlink(cert_file_.c_str());
  ::unlink(key_file_.c_str());
}

}  // namespace tw::testing
