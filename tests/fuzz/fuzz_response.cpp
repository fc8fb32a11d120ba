// Differential: the upstream client's response-head parser and chunk decoder against Beast's
// response parser. When ours takes a header, Beast takes the same status and framing; when ours
// decodes a chunked body to its end without an error, Beast decodes the same bytes.
#include "common/http/chunked.hpp"
#include "common/http/parse.hpp"

#include <boost/beast/http.hpp>

#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

namespace http = boost::beast::http;
namespace lh = lanes::common::http;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const std::string_view text(reinterpret_cast<const char*>(data), size);
    lh::response_head head;
    boost::system::error_code ec;
    const std::size_t used = head.parse(text, false, 16384, ec);
    if (used == 0)
        return 0;
    if (used > size)
        std::abort();
    // Ours takes a status line without the space after the code ("HTTP/1.1 503"), as lenient
    // clients do; Beast does not. Nothing else differs there.
    if (text.find("\r\n") == 12)
        return 0;
    http::response_parser<http::string_body> beast;
    beast.header_limit(16384);
    beast.body_limit(boost::none); // (our client bounds bodies elsewhere: --upstream-body-limit)
    beast.eager(true);
    boost::system::error_code bec;
    const std::size_t taken = beast.put(boost::asio::buffer(data, used), bec);
    if (bec && bec != http::error::need_more)
        std::abort(); // ours took a header Beast refuses
    if (!beast.is_header_done() || taken != used)
        std::abort();
    if (beast.get().result_int() != static_cast<unsigned>(head.status()) ||
        beast.get().version() != head.version())
        std::abort();
    // (1xx, 204 and 304 have no body whatever their fields say: Beast still notes the coding.)
    if (head.framing() != lh::body_framing::none &&
        (head.framing() == lh::body_framing::chunked) != beast.chunked())
        std::abort();
    if (head.framing() != lh::body_framing::chunked)
        return 0;
    const std::string_view body = text.substr(used);
    lh::chunk_decoder decoder;
    std::string out;
    bool error = false;
    const std::size_t consumed = decoder.decode(body, out, error);
    if (consumed > body.size())
        std::abort();
    if (error || !decoder.done())
        return 0;
    std::size_t pos = used;
    while (!beast.is_done() && pos < used + consumed) {
        boost::system::error_code e;
        pos += beast.put(boost::asio::buffer(data + pos, used + consumed - pos), e);
        if (e && e != http::error::need_more)
            std::abort(); // a body ours read whole, Beast refuses
        if (e == http::error::need_more)
            break;
    }
    if (!beast.is_done() || beast.get().body() != out)
        std::abort();
    return 0;
}
