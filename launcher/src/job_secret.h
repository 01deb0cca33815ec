#pragma once
// The per-job secret chorusrun hands every rank (docs/security.md): 256
// random bits from libcrypto, as 64 hex digits in CHORUS_SECRET. It travels
// through environments and a remote rank's stdin, never a command line.

#include <string>

namespace chorus::launcher {

/// The variable that carries it.
extern const char* const kSecretVariable;

/// A fresh secret, or "" with `*error` saying why (no randomness).
std::string make_job_secret(std::string* error);

/// The shell words a remote rank's command starts with: read the secret
/// from stdin into CHORUS_SECRET and export it.
std::string read_secret_from_stdin();

}  // namespace chorus::launcher
