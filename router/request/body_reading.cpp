#include "router/request/body_reading.hpp"

#include "router/request/request_view.hpp"

#include <string>

namespace lanes::router {

namespace {

struct thread_buffers {
    std::string padded;
    simdjson::ondemand::parser parser;
};

thread_buffers& buffers() {
    thread_local thread_buffers b;
    return b;
}

} // namespace

body_reading::body_reading(std::string_view body)
    : body_(body) {
    std::string& padded = buffers().padded;
    padded.assign(body);
    padded.resize(body.size() + simdjson::SIMDJSON_PADDING);
}

body_reading::~body_reading() {
    thread_buffers& b = buffers();
    if (b.padded.capacity() > kept_read_buffer_bytes)
        std::string().swap(b.padded);
    if (b.parser.capacity() > kept_read_buffer_bytes)
        b.parser = simdjson::ondemand::parser{};
}

simdjson::simdjson_result<simdjson::ondemand::document> body_reading::iterate() {
    thread_buffers& b = buffers();
    return b.parser.iterate(b.padded.data(), body_.size(), b.padded.size());
}

std::string_view body_reading::padded() const {
    return buffers().padded;
}

std::size_t body_reading::kept_bytes() {
    const thread_buffers& b = buffers();
    return b.padded.capacity() + b.parser.capacity();
}

} // namespace lanes::router
