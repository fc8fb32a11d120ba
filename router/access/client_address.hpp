// The address a request comes from, for limits keyed by client when there are no API keys. The
// peer's address, unless the peer is one of --trusted-proxies: then X-Forwarded-For is believed,
// read from the right, and the first hop that is not a trusted proxy is the client.
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

    std::string client_address(const boost::asio::ip::address& peer,
                               std::string_view forwarded_for) const;

private:
    struct net {
        boost::asio::ip::address base;
        unsigned prefix = 0;
    };
    std::vector<net> nets_;
};

} // namespace lanes::router
