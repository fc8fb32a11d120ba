#include "router/access/client_address.hpp"

#include "common/http/parse.hpp"

#include <algorithm>
#include <array>
#include <charconv>

namespace lanes::router {

namespace ip = boost::asio::ip;

namespace {

// An IPv4-mapped IPv6 address as the IPv4 one (a dual-stack listener reports those).
ip::address plain(const ip::address& a) {
    if (a.is_v6() && a.to_v6().is_v4_mapped())
        return ip::make_address_v4(ip::v4_mapped, a.to_v6());
    return a;
}

// The address as text, once per request: an IPv4 one in dotted quads written here (Asio's
// to_string goes through inet_ntop and sprintf, which took 1.6 % of the router's user time
// proxying small requests), an IPv6 one as Asio writes it.
std::string text_of(const ip::address& a) {
    if (!a.is_v4())
        return a.to_string();
    const auto b = a.to_v4().to_bytes();
    std::array<char, 16> buf; // "255.255.255.255"
    char* out = buf.data();
    for (std::size_t i = 0; i < b.size(); ++i) {
        if (i > 0)
            *out++ = '.';
        out = std::to_chars(out, buf.data() + buf.size(), static_cast<unsigned>(b[i])).ptr;
    }
    return std::string(buf.data(), out);
}

struct raw_address {
    std::array<unsigned char, 16> bytes{};
    bool v4 = false;
};

raw_address raw_of(const ip::address& a) {
    raw_address r;
    r.v4 = a.is_v4();
    if (r.v4) {
        const auto b = a.to_v4().to_bytes();
        std::copy(b.begin(), b.end(), r.bytes.begin());
    } else {
        const auto b = a.to_v6().to_bytes();
        std::copy(b.begin(), b.end(), r.bytes.begin());
    }
    return r;
}

bool prefix_matches(const ip::address& a, const ip::address& base, unsigned prefix) {
    const raw_address x = raw_of(a), y = raw_of(base);
    if (x.v4 != y.v4)
        return false;
    for (unsigned bit = 0; bit < prefix; ++bit) {
        const unsigned mask = 0x80u >> (bit % 8);
        if ((x.bytes[bit / 8] & mask) != (y.bytes[bit / 8] & mask))
            return false;
    }
    return true;
}

} // namespace

bool trusted_proxies::parse(std::string_view list, std::string& why) {
    nets_.clear();
    while (!list.empty()) {
        const auto comma = list.find(',');
        const std::string_view item = common::http::trim_ows(list.substr(0, comma));
        list = comma == std::string_view::npos ? std::string_view{} : list.substr(comma + 1);
        if (item.empty())
            continue;
        const auto slash = item.find('/');
        boost::system::error_code ec;
        const ip::address base = ip::make_address(std::string(item.substr(0, slash)), ec);
        if (ec) {
            why = "'" + std::string(item) + "' is not an address or network";
            return false;
        }
        const unsigned bits = base.is_v4() ? 32 : 128;
        unsigned prefix = bits;
        if (slash != std::string_view::npos) {
            const std::string_view p = item.substr(slash + 1);
            const auto [end, err] = std::from_chars(p.data(), p.data() + p.size(), prefix);
            if (err != std::errc{} || end != p.data() + p.size() || prefix > bits) {
                why = "'" + std::string(item) + "' has a bad prefix length";
                return false;
            }
        }
        nets_.push_back({plain(base), prefix});
    }
    return true;
}

bool trusted_proxies::contains(const ip::address& a) const {
    const ip::address p = plain(a);
    for (const auto& n : nets_)
        if (prefix_matches(p, n.base, n.prefix))
            return true;
    return false;
}

std::string trusted_proxies::identity_of(const ip::address& a) const {
    if (!a.is_v6() || ipv6_prefix_ >= 128)
        return text_of(a);
    auto bytes = a.to_v6().to_bytes();
    for (std::size_t bit = ipv6_prefix_; bit < 128; ++bit)
        bytes[bit / 8] &= static_cast<unsigned char>(~(0x80u >> (bit % 8)));
    return ip::address_v6(bytes).to_string() + "/" + std::to_string(ipv6_prefix_);
}

std::string trusted_proxies::client_address(const ip::address& peer,
                                            std::string_view forwarded_for) const {
    if (nets_.empty() || forwarded_for.empty() || !contains(peer))
        return identity_of(plain(peer));
    // From the right: each trusted hop says who came before it; the first untrusted one is the
    // client (anything left of it may be forged).
    ip::address last = plain(peer);
    while (!forwarded_for.empty()) {
        const auto comma = forwarded_for.rfind(',');
        const std::string_view hop = common::http::trim_ows(
            comma == std::string_view::npos ? forwarded_for : forwarded_for.substr(comma + 1));
        forwarded_for =
            comma == std::string_view::npos ? std::string_view{} : forwarded_for.substr(0, comma);
        boost::system::error_code ec;
        const ip::address a = ip::make_address(std::string(hop), ec);
        if (ec)
            return identity_of(last); // garbage: the last address we could trust to say it
        last = plain(a);
        if (!contains(last))
            return identity_of(last);
    }
    return identity_of(last);
}

} // namespace lanes::router
