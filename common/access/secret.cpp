#include "common/access/secret.hpp"

#include <openssl/crypto.h>
#include <openssl/evp.h>

#include <fstream>
#include <stdexcept>

namespace lanes::common::access {

namespace {

std::string_view trim(std::string_view s) {
    while (!s.empty() && (s.front() == ' ' || s.front() == '\t'))
        s.remove_prefix(1);
    while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r'))
        s.remove_suffix(1);
    return s;
}

} // namespace

digest sha256(std::string_view text) {
    digest d{};
    unsigned int n = 0;
    if (EVP_Digest(text.data(), text.size(), d.data(), &n, EVP_sha256(), nullptr) != 1 ||
        n != d.size())
        throw std::runtime_error("SHA-256 failed");
    return d;
}

bool same(const digest& a, const digest& b) {
    return CRYPTO_memcmp(a.data(), b.data(), a.size()) == 0;
}

std::string hex(const digest& d, std::size_t bytes) {
    static constexpr char digits[] = "0123456789abcdef";
    std::string out;
    for (std::size_t i = 0; i < bytes && i < d.size(); ++i) {
        out += digits[d[i] >> 4];
        out += digits[d[i] & 15];
    }
    return out;
}

std::string_view bearer_token(std::string_view authorization) {
    authorization = trim(authorization);
    // The scheme is case-insensitive (RFC 9110 11.1).
    constexpr std::string_view scheme = "bearer ";
    if (authorization.size() <= scheme.size())
        return {};
    for (std::size_t i = 0; i < scheme.size(); ++i) {
        char c = authorization[i];
        if (c >= 'A' && c <= 'Z')
            c = static_cast<char>(c - 'A' + 'a');
        if (c != scheme[i])
            return {};
    }
    return trim(authorization.substr(scheme.size()));
}

std::optional<std::string> read_secret_file(const std::string& path, std::string& why) {
    std::ifstream in(path);
    if (!in) {
        why = "cannot read " + path;
        return std::nullopt;
    }
    std::string line;
    std::getline(in, line);
    const std::string_view t = trim(line);
    if (t.empty()) {
        why = path + " holds no secret on its first line";
        return std::nullopt;
    }
    return std::string(t);
}

} // namespace lanes::common::access
