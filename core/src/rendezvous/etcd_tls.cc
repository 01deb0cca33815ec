// check_etcd_tls (rendezvous/etcd_client.h): the TLS files read with
// OpenSSL before any connection, so that a missing file, an expired
// certificate or a key of another certificate is named at once rather than
// as the TLS alert etcd answers with.
#include <openssl/asn1.h>
#include <openssl/bio.h>
#include <openssl/pem.h>
#include <openssl/x509.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>

#include "rendezvous/etcd_client.h"

namespace chorus::detail {

namespace {

struct FileCloser {
  void operator()(FILE* f) const { std::fclose(f); }
};
using File = std::unique_ptr<FILE, FileCloser>;
using Certificate = std::unique_ptr<X509, decltype(&X509_free)>;
using Key = std::unique_ptr<EVP_PKEY, decltype(&EVP_PKEY_free)>;

Status bad(const char* variable, const std::string& file, const std::string& why) {
  return Status::invalid_argument("CHORUS_RDZV_" + std::string(variable) + "=" + file + ": " + why);
}

Status open_file(const char* variable, const std::string& file, File* out) {
  out->reset(std::fopen(file.c_str(), "r"));
  if (!*out) return bad(variable, file, std::string("cannot read it: ") + std::strerror(errno));
  return Status::ok();
}

// No passphrase prompt on the terminal: an encrypted key fails to load.
int no_passphrase(char*, int, int, void*) { return 0; }

std::string time_text(const ASN1_TIME* t) {
  std::unique_ptr<BIO, decltype(&BIO_free)> bio(BIO_new(BIO_s_mem()), BIO_free);
  if (!bio || ASN1_TIME_print(bio.get(), t) != 1) return "(a date OpenSSL cannot print)";
  char* data = nullptr;
  const long n = BIO_get_mem_data(bio.get(), &data);
  return std::string(data, static_cast<size_t>(std::max(n, 0L)));
}

Status check_ca(const std::string& file) {
  File f(nullptr);
  Status s = open_file("CA_FILE", file, &f);
  if (!s.is_ok()) return s;
  Certificate ca(PEM_read_X509(f.get(), nullptr, no_passphrase, nullptr), X509_free);
  return ca ? Status::ok() : bad("CA_FILE", file, "no PEM certificate in it");
}

Status check_client(const EtcdTls& tls) {
  File f(nullptr);
  Status s = open_file("CERT_FILE", tls.cert_file, &f);
  if (!s.is_ok()) return s;
  Certificate cert(PEM_read_X509(f.get(), nullptr, no_passphrase, nullptr), X509_free);
  if (!cert) return bad("CERT_FILE", tls.cert_file, "no PEM certificate in it");
  if (X509_cmp_current_time(X509_get0_notAfter(cert.get())) <= 0) {
    return bad("CERT_FILE", tls.cert_file,
               "the certificate expired on " + time_text(X509_get0_notAfter(cert.get())) + "; etcd would refuse it");
  }
  if (X509_cmp_current_time(X509_get0_notBefore(cert.get())) > 0) {
    return bad("CERT_FILE", tls.cert_file,
               "the certificate is not valid before " + time_text(X509_get0_notBefore(cert.get())));
  }
  s = open_file("KEY_FILE", tls.key_file, &f);
  if (!s.is_ok()) return s;
  Key key(PEM_read_PrivateKey(f.get(), nullptr, no_passphrase, nullptr), EVP_PKEY_free);
  if (!key) return bad("KEY_FILE", tls.key_file, "no PEM private key in it (an encrypted key is not supported)");
  if (X509_check_private_key(cert.get(), key.get()) != 1) {
    return bad("KEY_FILE", tls.key_file, "not the key of CHORUS_RDZV_CERT_FILE=" + tls.cert_file);
  }
  return Status::ok();
}

}  // namespace

Status check_etcd_tls(const EtcdTls& tls, const std::vector<EtcdEndpoint>& endpoints) {
  const bool any_tls = std::any_of(endpoints.begin(), endpoints.end(), [](const EtcdEndpoint& e) { return e.tls; });
  const std::pair<const char*, const std::string*> files[] = {
      {"CA_FILE", &tls.ca_file}, {"CERT_FILE", &tls.cert_file}, {"KEY_FILE", &tls.key_file}};
  for (const auto& [variable, file] : files) {
    if (!file->empty() && !any_tls) {
      return bad(variable, *file,
                 "set, but no endpoint in CHORUS_RDZV_ENDPOINT is https:// (" + etcd_endpoints_text(endpoints) + ")");
    }
  }
  if (tls.cert_file.empty() != tls.key_file.empty()) {
    return Status::invalid_argument(
        tls.cert_file.empty() ? "CHORUS_RDZV_KEY_FILE is set but CHORUS_RDZV_CERT_FILE (its certificate) is not"
                              : "CHORUS_RDZV_CERT_FILE is set but CHORUS_RDZV_KEY_FILE (its private key) is not");
  }
  if (!tls.ca_file.empty()) {
    Status s = check_ca(tls.ca_file);
    if (!s.is_ok()) return s;
  }
  return tls.cert_file.empty() ? Status::ok() : check_client(tls);
}

}  // namespace chorus::detail
