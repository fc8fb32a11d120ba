// Integration-test harness: start real lanes processes on port 0, learn the port from their log
// line, wait on /health with a deadline, talk HTTP to them, and stop them on scope exit.
#pragma once

#include "common/http/message.hpp"
#include "tests/time_scale.hpp"

#include <chrono>
#include <memory>
#include <string>
#include <vector>

namespace lanes::test {

class process {
public:
    process(std::string binary, std::vector<std::string> args);
    ~process(); // SIGTERM, then SIGKILL after a deadline
    process(const process&) = delete;
    process& operator=(const process&) = delete;

    unsigned short port() const { return port_; }
    // The router's admin listener (0 for other programs).
    unsigned short admin_port() const { return admin_port_; }
    std::string url() const {
        return (secure_ ? "https" : "http") + std::string("://127.0.0.1:") + std::to_string(port_);
    }
    int pid() const { return pid_; }
    void signal(int sig);
    // Waits for exit; returns the exit code, or -1 on timeout, or 128+signal.
    int wait(std::chrono::milliseconds timeout);
    std::string log() const;

private:
    int pid_ = -1;
    unsigned short port_ = 0;
    unsigned short admin_port_ = 0;
    bool secure_ = false; // the main listener speaks TLS
    std::string log_path_;
    bool exited_ = false;
};

struct reply {
    int status = 0;
    std::string body;
    std::string content_type;
    common::http::header_list headers;
    std::string error; // transport error
    std::string header(std::string_view name) const;
};

reply request(unsigned short port, boost::beast::http::verb method, const std::string& path,
              const std::string& body = "", const common::http::header_list& headers = {},
              std::chrono::milliseconds timeout = std::chrono::milliseconds(60'000));
reply get(unsigned short port, const std::string& path);
reply post_json(unsigned short port, const std::string& path, const std::string& body,
                const common::http::header_list& headers = {});

// Polls GET /health until 200 or the deadline (scaled under a sanitizer); false on timeout.
bool wait_healthy(unsigned short port, std::chrono::milliseconds deadline);

// N replicas (each `--port 0 --seed i` plus `replica_args`) and a router in front of them on
// 127.0.0.1 (plus `router_args`), all healthy before the constructor returns (else it throws).
struct fleet {
    std::vector<std::unique_ptr<process>> replicas;
    std::unique_ptr<process> router;

    fleet(int n, const std::vector<std::string>& replica_args,
          const std::vector<std::string>& router_args);
};

// Runs `promtool check metrics` on `text`; returns its exit code (-1 when promtool is missing)
// and its output.
int promtool_check(const std::string& text, std::string& output);

} // namespace lanes::test
