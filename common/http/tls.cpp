#include "common/http/tls.hpp"

#include <boost/asio/ssl.hpp>

#include <openssl/ssl.h>

#include <cstring>
#include <stdexcept>

namespace lanes::common::http {

namespace ssl = boost::asio::ssl;

namespace {

// TLS 1.2 is the oldest version either side speaks (as nginx's and Go's defaults today).
void no_old_versions(ssl::context& ctx) {
    ctx.set_options(ssl::context::default_workarounds | ssl::context::no_sslv2 |
                    ssl::context::no_sslv3 | ssl::context::no_tlsv1 | ssl::context::no_tlsv1_1);
    SSL_CTX_set_min_proto_version(ctx.native_handle(), TLS1_2_VERSION);
}

// ALPN on the server: http/1.1 when the client offers it; a client that offers only other
// protocols (h2 alone) gets no ALPN answer and may go on with HTTP/1.1 or leave.
int select_http11(SSL*, const unsigned char** out, unsigned char* out_len, const unsigned char* in,
                  unsigned in_len, void*) {
    for (unsigned at = 0; at < in_len;) {
        const unsigned len = in[at];
        if (at + 1 + len > in_len)
            break;
        if (len == 8 && std::memcmp(in + at + 1, "http/1.1", 8) == 0) {
            *out = in + at + 1;
            *out_len = 8;
            return SSL_TLSEXT_ERR_OK;
        }
        at += 1 + len;
    }
    return SSL_TLSEXT_ERR_NOACK;
}

std::shared_ptr<ssl::context> server_context(const std::string& cert, const std::string& key) {
    auto ctx = std::make_shared<ssl::context>(ssl::context::tls_server);
    no_old_versions(*ctx);
    try {
        ctx->use_certificate_chain_file(cert);
    } catch (const boost::system::system_error& e) {
        throw std::runtime_error("TLS certificate " + cert + ": " + e.code().message());
    }
    try {
        ctx->use_private_key_file(key, ssl::context::pem);
    } catch (const boost::system::system_error& e) {
        throw std::runtime_error("TLS key " + key + ": " + e.code().message());
    }
    if (SSL_CTX_check_private_key(ctx->native_handle()) != 1)
        throw std::runtime_error("TLS key " + key + " does not match the certificate " + cert);
    SSL_CTX_set_alpn_select_cb(ctx->native_handle(), select_http11, nullptr);
    return ctx;
}

std::shared_ptr<ssl::context> make_client_context(const tls_trust& trust) {
    auto ctx = std::make_shared<ssl::context>(ssl::context::tls_client);
    no_old_versions(*ctx);
    static constexpr unsigned char alpn[] = "\x08http/1.1";
    SSL_CTX_set_alpn_protos(ctx->native_handle(), alpn, sizeof alpn - 1);
    if (trust.insecure_skip_verify) {
        ctx->set_verify_mode(ssl::verify_none);
        return ctx;
    }
    ctx->set_verify_mode(ssl::verify_peer);
    try {
        if (trust.ca_file.empty())
            ctx->set_default_verify_paths();
        else
            ctx->load_verify_file(trust.ca_file);
    } catch (const boost::system::system_error& e) {
        throw std::runtime_error("CA file " + (trust.ca_file.empty() ? "(system)" : trust.ca_file) +
                                 ": " + e.code().message());
    }
    return ctx;
}

std::mutex client_mutex;
std::shared_ptr<ssl::context> client_context; // made on first use when never set

} // namespace

tls_identity::tls_identity(std::string cert_file, std::string key_file)
    : cert_file_(std::move(cert_file))
    , key_file_(std::move(key_file))
    , current_(server_context(cert_file_, key_file_)) {}

std::shared_ptr<ssl::context> tls_identity::current() const {
    std::lock_guard lock(mutex_);
    return current_;
}

std::string tls_identity::reload() {
    try {
        auto fresh = server_context(cert_file_, key_file_);
        std::lock_guard lock(mutex_);
        current_ = std::move(fresh);
        return {};
    } catch (const std::exception& e) {
        return e.what();
    }
}

void set_client_trust(const tls_trust& trust) {
    auto ctx = make_client_context(trust);
    std::lock_guard lock(client_mutex);
    client_context = std::move(ctx);
}

std::shared_ptr<ssl::context> client_tls_context() {
    std::lock_guard lock(client_mutex);
    if (!client_context)
        client_context = make_client_context({});
    return client_context;
}

} // namespace lanes::common::http
