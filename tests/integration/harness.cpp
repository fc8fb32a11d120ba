#include "harness.hpp"

#include "common/http/fetch.hpp"

#include <boost/asio.hpp>

#include <algorithm>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <fcntl.h>
#include <fstream>
#include <regex>
#include <sstream>
#include <stdexcept>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>

namespace lanes::test {

namespace {

constexpr auto port_deadline = scaled(std::chrono::seconds(20));
constexpr auto stop_deadline = scaled(std::chrono::seconds(10));

std::string read_file(const std::string& path) {
    std::ifstream in(path);
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
}

} // namespace

process::process(std::string binary, std::vector<std::string> args) {
    char tmpl[] = "/tmp/lanes-test-XXXXXX.log";
    const int fd = ::mkstemps(tmpl, 4);
    if (fd < 0)
        throw std::runtime_error("mkstemps failed");
    log_path_ = tmpl;
    std::vector<std::string> argv_store{binary};
    argv_store.insert(argv_store.end(), args.begin(), args.end());
    // The ThreadSanitizer tier runs every router with more I/O threads than the default.
    const char* threads = std::getenv("LANES_TEST_ROUTER_THREADS");
    if (threads != nullptr && binary.ends_with("lanes-router") &&
        std::find(args.begin(), args.end(), "--threads") == args.end()) {
        argv_store.push_back("--threads");
        argv_store.push_back(threads);
    }
    // Every router's admin listener on a port of its own choosing (tests run side by side).
    const bool router = binary.ends_with("lanes-router");
    if (router && std::find(args.begin(), args.end(), "--admin-port") == args.end()) {
        argv_store.push_back("--admin-port");
        argv_store.push_back("0");
    }
    // The tests read where each request went from x-lanes-replica (off by default).
    if (router && std::find(args.begin(), args.end(), "--route-headers") == args.end()) {
        argv_store.push_back("--route-headers");
        argv_store.push_back("true");
    }
    std::vector<char*> argv;
    for (auto& a : argv_store)
        argv.push_back(a.data());
    argv.push_back(nullptr);
    pid_ = ::fork();
    if (pid_ == 0) {
        // A test process that is killed (a ctest timeout) must not leave its fleet running.
        ::prctl(PR_SET_PDEATHSIG, SIGKILL);
        ::dup2(fd, STDOUT_FILENO);
        ::dup2(fd, STDERR_FILENO);
        ::execv(binary.c_str(), argv.data());
        std::perror("execv");
        ::_exit(127);
    }
    ::close(fd);
    // Each listener by its own line: "<name> listening on http(s)://host:port", the admin one
    // named "admin".
    const std::regex listening(R"((\S+) listening on (https?)://[^ \n]*:(\d+))");
    const auto deadline = std::chrono::steady_clock::now() + port_deadline;
    while (std::chrono::steady_clock::now() < deadline) {
        const std::string text = read_file(log_path_);
        for (std::sregex_iterator it(text.begin(), text.end(), listening), end; it != end; ++it) {
            const auto port = static_cast<unsigned short>(std::stoi((*it)[3].str()));
            const bool admin = (*it)[1].str() == "admin";
            (admin ? admin_port_ : port_) = port;
            if (!admin)
                secure_ = (*it)[2].str() == "https";
        }
        if (port_ != 0 && (!router || admin_port_ != 0))
            return;
        if (wait(std::chrono::milliseconds(0)) != -1)
            break;
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    throw std::runtime_error(binary + " did not report its port; log:\n" + log());
}

process::~process() {
    if (!exited_) {
        signal(SIGTERM);
        if (wait(stop_deadline) == -1) {
            signal(SIGKILL);
            wait(stop_deadline);
        }
    }
    ::unlink(log_path_.c_str());
}

void process::signal(int sig) {
    if (!exited_)
        ::kill(pid_, sig);
}

int process::wait(std::chrono::milliseconds timeout) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    for (;;) {
        int status = 0;
        const int r = ::waitpid(pid_, &status, WNOHANG);
        if (r == pid_) {
            exited_ = true;
            return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
        }
        if (std::chrono::steady_clock::now() >= deadline)
            return -1;
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
}

std::string process::log() const {
    return read_file(log_path_);
}

std::string reply::header(std::string_view name) const {
    for (const auto& [k, v] : headers)
        if (boost::beast::iequals(k, name))
            return v;
    return {};
}

reply request(unsigned short port, boost::beast::http::verb method, const std::string& path,
              const std::string& body, const common::http::header_list& headers,
              std::chrono::milliseconds timeout) {
    const common::http::url target{"127.0.0.1", port, ""};
    common::http::fetch_options options;
    options.body = body;
    options.headers = headers;
    options.total_timeout = timeout;
    options.body_limit = 64 * 1024 * 1024;
    common::http::fetch_result res = common::http::fetch_blocking(target, method, path, options);
    reply r;
    r.status = res.status;
    r.body = std::move(res.body);
    r.content_type = std::move(res.content_type);
    r.headers = std::move(res.headers);
    if (res.ec)
        r.error = res.ec.message();
    return r;
}

reply get(unsigned short port, const std::string& path) {
    return request(port, boost::beast::http::verb::get, path);
}

reply post_json(unsigned short port, const std::string& path, const std::string& body,
                const common::http::header_list& headers) {
    return request(port, boost::beast::http::verb::post, path, body, headers);
}

bool wait_healthy(unsigned short port, std::chrono::milliseconds deadline) {
    const auto until = std::chrono::steady_clock::now() + scaled(deadline);
    while (std::chrono::steady_clock::now() < until) {
        if (request(port, boost::beast::http::verb::get, "/health", "", {},
                    std::chrono::milliseconds(1000))
                .status == 200)
            return true;
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    return false;
}

fleet::fleet(int n, const std::vector<std::string>& replica_args,
             const std::vector<std::string>& router_args) {
    std::vector<std::string> args = {"--host", "127.0.0.1", "--port", "0"};
    for (int i = 0; i < n; ++i) {
        std::vector<std::string> a = {"--port", "0", "--seed", std::to_string(i)};
        a.insert(a.end(), replica_args.begin(), replica_args.end());
        replicas.push_back(std::make_unique<process>(LANES_REPLICA_BIN, a));
        args.push_back("--replica");
        args.push_back(replicas.back()->url());
    }
    args.insert(args.end(), router_args.begin(), router_args.end());
    router = std::make_unique<process>(LANES_ROUTER_BIN, args);
    for (auto& r : replicas)
        if (!wait_healthy(r->port(), std::chrono::seconds(10)))
            throw std::runtime_error("replica did not become healthy:\n" + r->log());
    if (!wait_healthy(router->port(), std::chrono::seconds(10)))
        throw std::runtime_error("router did not become healthy:\n" + router->log());
}

int promtool_check(const std::string& text, std::string& output) {
    if (std::system("command -v promtool >/dev/null 2>&1") != 0)
        return -1;
    char in_path[] = "/tmp/lanes-metrics-XXXXXX";
    const int fd = ::mkstemp(in_path);
    if (fd < 0)
        return -1;
    [[maybe_unused]] auto n = ::write(fd, text.data(), text.size());
    ::close(fd);
    const std::string out_path = std::string(in_path) + ".out";
    const std::string cmd =
        "promtool check metrics < " + std::string(in_path) + " > " + out_path + " 2>&1";
    const int status = std::system(cmd.c_str());
    output = read_file(out_path);
    ::unlink(in_path);
    ::unlink(out_path.c_str());
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

} // namespace lanes::test
