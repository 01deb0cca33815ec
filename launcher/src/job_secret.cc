#include "job_secret.h"

#include <openssl/rand.h>

namespace chorus::launcher {

const char* const kSecretVariable = "CHORUS_SECRET";

std::string make_job_secret(std::string* error) {
  unsigned char bytes[32];
  if (RAND_bytes(bytes, sizeof bytes) != 1) {
    *error = "no randomness for the job's secret (OpenSSL RAND_bytes failed)";
    return "";
  }
  static const char kHex[] = "0123456789abcdef";
  std::string out;
  for (unsigned char b : bytes) out += {kHex[b >> 4], kHex[b & 15]};
  return out;
}

// `read` of POSIX sh: one line, byte by byte, so the program's stdin goes on after it.
std::string read_secret_from_stdin() {
  return std::string("IFS= read -r ") + kSecretVariable + " && export " + kSecretVariable;
}

}  // namespace chorus::launcher
