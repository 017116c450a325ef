// Self-signed certificates for TLS tests, made at test time with OpenSSL (nothing checked in
// expires): a P-256 key and a certificate that is its own CA, so that the certificate file is
// also the client's trust anchor (ca_file). Written as PEM files under $TMPDIR for servers
// in other processes; removed when the object dies.
#pragma once

#include <openssl/evp.h>
#include <openssl/x509.h>

#include <memory>
#include <string>

namespace tw::testing {

class TestCertificate {
 public:
  // `san` as OpenSSL writes subjectAltName ("IP:127.0.0.1,DNS:localhost"); `cn` the subject's
  // common name. Throws std::runtime_error when OpenSSL fails.
  TestCertificate(const std::string& san, const std::string& cn);
  ~TestCertificate();
  TestCertificate(const TestCertificate&) = delete;
  TestCertificate& operator=(const TestCertificate&) = delete;

  X509* cert() const { return cert_.get(); }
  EVP_PKEY* key() const { return key_.get(); }
  const std::string& cert_file() const { return cert_file_; }  // PEM; also the CA file
  const std::string& key_file() const { return key_file_; }    // PEM, unencrypted, mode 0600

 private:
  struct FreeKey {
    void operator()(EVP_PKEY* p) const { EVP_PKEY_free(p); }
  };
  struct FreeCert {
    void operator()(X509* p) const { X509_free(p); }
  };
  std::unique_ptr<EVP_PKEY, FreeKey> key_;
  std::unique_ptr<X509, FreeCert> cert_;
  std::string cert_file_, key_file_;
};

}  // namespace tw::testing
