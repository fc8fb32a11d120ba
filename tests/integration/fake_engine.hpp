// A scriptable stand-in for a vLLM / SGLang server, in the test process on loopback: it records
// every request exactly as it came (method, target, headers, body) and answers each path as the
// test says (status, headers, body, or a stream of events); /health, /metrics and /v1/models are
// served from settable state. For what the real replicas cannot be made to do.
#pragma once

#include "common/http/message.hpp"

#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace lanes::test {

class fake_engine {
public:
    struct received {
        std::string method;
        std::string target;
        common::http::header_list headers;
        std::string body;
        std::string header(std::string_view name) const; // "" when absent (any case)
    };
    struct answer {
        int status = 200;
        std::string content_type = "application/json";
        common::http::header_list headers;
        std::string body =
            R"({"id":"cmpl-fake","object":"text_completion","choices":[{"index":0,"text":"ok","finish_reason":"stop"}]})";
        // When not empty: a chunked event stream of these SSE events ("data: " is added).
        std::vector<std::string> events;
    };
    using script = std::function<answer(const received&)>;

    // Serves `models`, owned by `owned_by` ("vllm"; "lanes" makes it look like a lanes replica).
    explicit fake_engine(std::vector<std::string> models = {"m"}, std::string owned_by = "vllm");
    ~fake_engine();
    fake_engine(const fake_engine&) = delete;
    fake_engine& operator=(const fake_engine&) = delete;

    std::string url() const;
    unsigned short port() const { return port_; }

    // How POSTs (and any other method but the GETs below) are answered; the default is `answer{}`.
    void set_script(script s);
    void set_models(std::vector<std::string> models);
    // How long each /v1/models answer waits before it is sent (none by default).
    void set_models_delay(std::chrono::milliseconds delay);
    void set_health(int status);
    void set_metrics(std::string text);

    // Every request but GET /health, /metrics and /v1/models, in arrival order (or those whose
    // path is `path`).
    std::vector<received> requests(std::string_view path = {}) const;
    // The GETs of the monitor's paths, in arrival order.
    std::vector<received> monitor_requests(std::string_view path) const;

    struct state; // shared with the server's handler

private:
    std::unique_ptr<state> st_;
    unsigned short port_ = 0;
};

} // namespace lanes::test
