#include "common/http/message.hpp"

#include "common/http/parse.hpp"

#include <algorithm>

namespace lanes::common::http {

// A few fields are usual; more grow the table.
constexpr std::size_t usual_fields = 8;

request::span request::keep(std::string_view s) {
    const auto at = reinterpret_cast<std::uintptr_t>(s.data());
    const auto base = reinterpret_cast<std::uintptr_t>(source_);
    if (source_ && at >= base && at + s.size() <= base + text_.size()) // within start_in's copy
        return {static_cast<std::uint32_t>(at - base), static_cast<std::uint32_t>(s.size())};
    const span out{static_cast<std::uint32_t>(text_.size()), static_cast<std::uint32_t>(s.size())};
    source_ = nullptr; // appending may move text_: no more views into the source from here
    text_.append(s);
    return out;
}

void request::reset(std::string_view text, const char* source, beast_http::verb verb,
                    std::string_view method, std::string_view target, unsigned version) {
    text_.assign(text);
    source_ = source;
    fields_.clear();
    fields_.reserve(usual_fields);
    body_.clear();
    verb_ = verb;
    version_ = version;
    method_ = keep(method);
    target_ = keep(target);
}

void request::start(beast_http::verb verb, std::string_view method, std::string_view target,
                    unsigned version, std::size_t text_bytes) {
    text_.reserve(text_bytes);
    reset({}, nullptr, verb, method, target, version);
}

void request::start_in(std::string_view header, beast_http::verb verb, std::string_view method,
                       std::string_view target, unsigned version) {
    reset(header, header.data(), verb, method, target, version);
}

void request::add(std::string_view name, std::string_view value) {
    const span n = keep(name);
    fields_.emplace_back(n, keep(value));
}

void request::remove(std::string_view name) {
    std::erase_if(fields_, [&](const auto& f) { return iequals_ascii(slice(f.first), name); });
}

std::size_t request::release_large(std::size_t bytes) {
    std::size_t largest = 0;
    if (body_.capacity() > bytes) {
        largest = body_.capacity();
        std::string().swap(body_);
    }
    if (text_.capacity() > bytes) {
        largest = std::max(largest, text_.capacity());
        std::string().swap(text_);
        source_ = nullptr;
    }
    return largest;
}

std::optional<std::string_view> request::find(std::string_view name) const {
    for (const auto& [n, v] : fields_)
        if (iequals_ascii(slice(n), name))
            return slice(v);
    return std::nullopt;
}

std::string request::joined(std::string_view name) const {
    std::string out;
    bool first = true;
    for (const auto& [n, v] : fields_) {
        if (!iequals_ascii(slice(n), name))
            continue;
        if (!first)
            out += ", ";
        out += slice(v);
        first = false;
    }
    return out;
}

std::string_view request::operator[](beast_http::field name) const {
    const auto s = beast_http::to_string(name);
    return (*this)[std::string_view(s.data(), s.size())];
}

bool request::keep_alive() const {
    bool close = false, keep = false;
    for (const auto& [n, v] : fields_)
        if (field_name_is(slice(n), "connection")) {
            close = close || list_has(slice(v), "close");
            keep = keep || list_has(slice(v), "keep-alive");
        }
    return version_ >= 11 ? !close : keep && !close;
}

response make_response(const request& req, beast_http::status status, std::string body,
                       std::string_view content_type) {
    response res{status, req.version()};
    res.set(beast_http::field::server, server_header);
    res.set(beast_http::field::content_type, content_type);
    res.keep_alive(req.keep_alive());
    res.body() = std::move(body);
    res.prepare_payload();
    return res;
}

namespace {

template <class Fields>
void append_fields(std::string& out, const Fields& fields) {
    for (const auto& f : fields) {
        out += f.name_string();
        out += ": ";
        out += f.value();
        out += "\r\n";
    }
    out += "\r\n";
}

} // namespace

std::string_view version_text(unsigned version) {
    return version == 10 ? "HTTP/1.0" : "HTTP/1.1";
}

std::string serialize_header(const outgoing_request& req) {
    std::string out;
    out.reserve(256);
    out += req.method_string();
    out += ' ';
    out += req.target();
    out += ' ';
    out += version_text(req.version());
    out += "\r\n";
    append_fields(out, req.base());
    return out;
}

std::string serialize_header(const response& res) {
    std::string out;
    out.reserve(256);
    out += version_text(res.version());
    out += ' ';
    out += std::to_string(res.result_int());
    out += ' ';
    out += res.reason();
    out += "\r\n";
    append_fields(out, res.base());
    return out;
}

} // namespace lanes::common::http
