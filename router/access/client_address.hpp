// The address a request comes from, for limits keyed by client when there are no API keys. The
// peer's address, unless the peer is one of --trusted-proxies: then X-Forwarded-For is believed,
// read from the right, and the first hop that is not a trusted proxy is the client. An IPv6
// client counts as its network of --client-ipv6-prefix bits (64: a host is usually given a whole
// /64, and rotating within it must not make a new client per address).
#pragma once

#include <boost/asio/ip/address.hpp>

#include <string>
#include <string_view>
#include <vector>

namespace lanes::router {

class trusted_proxies {
public:
    // "10.0.0.0/8,192.168.1.7,::1/128": addresses and networks, comma-separated. False with
    // `why` set on a bad entry.
    bool parse(std::string_view list, std::string& why);
    bool contains(const boost::asio::ip::address& a) const;
    bool empty() const { return nets_.empty(); }

    // The client's identity: its IPv4 address, or its IPv6 network ("2001:db8:1:2::/64").
    std::string client_address(const boost::asio::ip::address& peer,
                               std::string_view forwarded_for) const;
    // Bits of an IPv6 address that name a client (1..128; 128: the address itself).
    void set_ipv6_prefix(unsigned bits) { ipv6_prefix_ = bits; }

private:
    struct net {
        boost::asio::ip::address base;
        unsigned prefix = 0;
    };
    std::string identity_of(const boost::asio::ip::address& a) const;

    std::vector<net> nets_;
    unsigned ipv6_prefix_ = 64;
};

} // namespace lanes::router
