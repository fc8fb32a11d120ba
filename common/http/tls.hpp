// TLS for the HTTP server and client (OpenSSL through Asio's ssl::context, which Beast's
// ssl_stream uses): a listener's certificate and key, re-read on reload; the trust a client puts
// in the https servers it connects to. TLS 1.2 and later, ALPN http/1.1.
#pragma once

#include <memory>
#include <mutex>
#include <string>

namespace boost::asio::ssl {
class context;
}

namespace lanes::common::http {

// A listener's certificate (chain) and private key, PEM files.
class tls_identity {
public:
    // Reads both files; throws std::runtime_error naming the file and OpenSSL's reason.
    tls_identity(std::string cert_file, std::string key_file);

    // The context new connections are accepted with; a connection keeps the one it started with.
    std::shared_ptr<boost::asio::ssl::context> current() const;
    // Reads the files again. On failure the last good certificate stays in force and the error
    // is returned ("" on success).
    std::string reload();
    const std::string& cert_file() const { return cert_file_; }

private:
    std::string cert_file_, key_file_;
    mutable std::mutex mutex_;
    std::shared_ptr<boost::asio::ssl::context> current_;
};

// How a client checks the https servers it talks to.
struct tls_trust {
    std::string ca_file;               // PEM bundle; "" uses the system's default paths
    bool insecure_skip_verify = false; // no certificate or name check at all (tests only)
};

// Sets the trust of this process's https connections (every client connection made after).
// Throws std::runtime_error when the CA file cannot be read.
void set_client_trust(const tls_trust& trust);
// The client context in force (the system's default trust until set_client_trust).
std::shared_ptr<boost::asio::ssl::context> client_tls_context();

} // namespace lanes::common::http
