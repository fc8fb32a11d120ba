#include "common/http/server_flags.hpp"

namespace lanes::common::http {

void add_server_flags(flag_set& f, server_config& cfg, const server_flag_sections& sections) {
    f.section(sections.listening);
    f.add("reuse-port", cfg.reuse_port,
          "let other processes listen on the same address and port (SO_REUSEPORT): the kernel "
          "spreads new connections over them");
    f.add("max-connections", cfg.max_connections,
          "open client connections past which new ones are closed at once (0: fit the "
          "open-file limit, raised to its hard limit at start)");
    f.add("descriptor-table", cfg.descriptor_table,
          "descriptor slots made at start (at most the open-file limit), so that the kernel "
          "does not grow the table while serving, which stalls the thread that opens a "
          "descriptor for an RCU grace period (0: grow as needed)");
    f.add("accept-backoff", cfg.accept_backoff,
          "pause in accepting when out of file descriptors (doubles while it lasts)");
    f.add("accept-backoff-max", cfg.accept_backoff_max, "longest such pause");
    f.add("shutdown-grace", cfg.shutdown_grace, "how long SIGTERM lets requests finish");

    f.section(sections.limits);
    f.add("body-limit", cfg.body_limit, "largest request body on the wire").value_name("BYTES");
    f.add("header-limit", cfg.header_limit, "largest request header").value_name("BYTES");
    f.add("idle-timeout", cfg.idle_timeout, "client keep-alive idle timeout");
    f.add("header-read-timeout", cfg.header_read_timeout, "time to receive the headers");
    f.add("body-read-timeout", cfg.body_read_timeout, "time to receive the body");
    f.add("write-timeout", cfg.write_timeout, "time for each response write");
    f.add("client-watch-delay", cfg.client_watch_delay,
          "how soon a request starts watching for its client leaving (0: at once)");
    f.add("idle-buffer-bytes", cfg.idle_buffer_bytes,
          "read buffer and request storage a connection keeps between requests, each")
        .value_name("BYTES");
    f.add("chunk-extension-limit", cfg.chunk_extension_limit,
          "longest extensions of one chunk of a chunked request body")
        .value_name("BYTES");
    f.add("framing-buffer-limit", cfg.framing_buffer_limit,
          "most bytes of a chunk-size line or trailer section held at once")
        .value_name("BYTES");
    f.add("lingering-timeout", cfg.lingering_timeout,
          "after a refusal, how long the rest of the client's bytes are read and dropped before "
          "closing, so the refusal arrives");
    f.add("lingering-bytes", cfg.lingering_bytes, "most bytes dropped that way")
        .value_name("BYTES");

    f.section(sections.tls);
    f.add("tls-cert", cfg.tls_cert_file,
          "PEM certificate chain: serve TLS (1.2 and later, ALPN http/1.1) with it; re-read on "
          "SIGHUP")
        .value_name("PATH");
    f.add("tls-key", cfg.tls_key_file, "PEM private key of --tls-cert; re-read on SIGHUP")
        .value_name("PATH");
    f.add("tls-handshake-timeout", cfg.tls_handshake_timeout,
          "time from accepting a TLS connection to the end of its handshake");
    f.add("tls-close-timeout", cfg.tls_close_timeout,
          "how long a closing TLS connection waits for the client's close_notify");
}

void check_server_config(const server_config& cfg, std::vector<std::string>& errors) {
    auto need = [&](bool ok, const char* message) {
        if (!ok)
            errors.emplace_back(message);
    };
    need(cfg.header_limit >= 1024, "--header-limit must be at least 1024");
    need(cfg.body_limit >= 1024, "--body-limit must be at least 1024");
    need(cfg.chunk_extension_limit >= 16, "--chunk-extension-limit must be at least 16");
    need(cfg.framing_buffer_limit >= 1024 && cfg.framing_buffer_limit <= (64u << 20),
         "--framing-buffer-limit must be in 1024..67108864");
    need(cfg.accept_backoff.count() > 0, "--accept-backoff must be positive");
    need(cfg.accept_backoff_max >= cfg.accept_backoff,
         "--accept-backoff-max must be at least --accept-backoff");
    need(cfg.idle_buffer_bytes >= 4096, "--idle-buffer-bytes must be at least 4096");
    need(cfg.idle_timeout.count() > 0, "--idle-timeout must be positive");
    need(cfg.header_read_timeout.count() > 0, "--header-read-timeout must be positive");
    need(cfg.body_read_timeout.count() > 0, "--body-read-timeout must be positive");
    need(cfg.write_timeout.count() > 0, "--write-timeout must be positive");
    need(cfg.lingering_timeout.count() >= 0, "--lingering-timeout must be >= 0");
    need(cfg.client_watch_delay.count() >= 0, "--client-watch-delay must be >= 0");
    need(cfg.tls_cert_file.empty() == cfg.tls_key_file.empty(),
         "--tls-cert and --tls-key go together");
    need(cfg.tls_handshake_timeout.count() > 0, "--tls-handshake-timeout must be positive");
    need(cfg.tls_close_timeout.count() >= 0, "--tls-close-timeout must be >= 0");
}

} // namespace lanes::common::http
