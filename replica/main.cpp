// lanes-replica: parse config, wire engine + HTTP front, run until SIGINT/SIGTERM.
#include "common/access/secret.hpp"
#include "common/http/run_loop.hpp"
#include "common/http/server.hpp"
#include "common/log.hpp"
#include "common/openai/error.hpp"
#include "replica/api.hpp"
#include "replica/backends/backend.hpp"
#include "replica/config.hpp"
#include "replica/engine/engine.hpp"
#include "replica/kv_events/publisher.hpp"
#include "replica/metrics.hpp"
#include "replica/models/hf_config.hpp"

#include <boost/asio/io_context.hpp>

#include <algorithm>
#include <cstdio>
#include <exception>
#include <filesystem>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string_view>

int main(int argc, char** argv) {
    using namespace lanes;
    replica::replica_config cfg;
    common::flag_set flags = replica::make_flags(cfg);
    std::vector<std::string> errors = flags.parse(argc, argv);
    if (flags.print_if_requested())
        return 0;
    auto more = replica::validate(cfg);
    errors.insert(errors.end(), more.begin(), more.end());
    if (!errors.empty())
        return common::report_config_errors("lanes-replica", errors);
    replica::resolve_model_names(cfg);
    common::log::level lvl{};
    common::log::parse_level(cfg.log_level, lvl);
    common::log::set_level(lvl);
    common::log::set_queue_limit(cfg.log_queue_bytes);
    if (!cfg.kv_dump_token_file.empty()) {
        std::string why;
        auto token = common::access::read_secret_file(cfg.kv_dump_token_file, why);
        if (!token)
            return common::report_config_errors("lanes-replica", {"--kv-dump-token-file: " + why});
        cfg.kv_dump_token = std::move(*token);
    }

    try {
        std::string note;
        const replica::backend_kind kind = replica::resolve_backend(cfg.backend, note);
        if (!note.empty())
            LANES_LOG(info, "engine", note);
        std::optional<replica::hf_model> checkpoint;
        if (!cfg.model.empty()) {
            checkpoint = replica::read_hf_config(cfg.model);
            // The model's own tokenizer files, as vLLM; without them only a byte-vocabulary
            // model (an exported preset) can be served.
            if (cfg.tokenizer.empty() && std::filesystem::exists(cfg.model + "/tokenizer.json"))
                cfg.tokenizer = cfg.model;
            else if (cfg.tokenizer.empty() && checkpoint->cfg.vocab != common::vocab_size)
                throw std::runtime_error(cfg.model +
                                         " has no tokenizer.json: give --tokenizer DIR");
            const auto len = replica::checkpoint_max_model_len(
                *checkpoint, static_cast<std::size_t>(cfg.max_model_len));
            if (static_cast<std::int64_t>(len) < cfg.max_model_len)
                LANES_LOG(info, "engine",
                          "--max-model-len " << cfg.max_model_len
                                             << " capped by max_position_embeddings to " << len);
            cfg.max_model_len = static_cast<std::int64_t>(len);
            const auto& c = checkpoint->cfg;
            LANES_LOG(info, "engine",
                      "model " << cfg.model << ": " << checkpoint->architecture << ", "
                               << c.n_layers << " layers, hidden " << c.d_model << ", heads "
                               << c.n_heads << "/" << c.n_kv_heads << " x " << c.head_dim
                               << ", vocabulary " << c.vocab << ", "
                               << c.parameter_count() / 1'000'000 << "M parameters");
            if (!checkpoint->unrecognized.empty()) {
                std::string fields;
                for (const auto& f : checkpoint->unrecognized)
                    fields += (fields.empty() ? "" : ", ") + f;
                LANES_LOG(warn, "engine",
                          "config.json fields lanes does not read (believed not to change the "
                          "forward pass; check them): "
                              << fields);
            }
        }
        std::shared_ptr<const common::model_tokenizer> tokenizer;
        if (!cfg.tokenizer.empty()) {
            tokenizer = common::model_tokenizer::load(cfg.tokenizer, {cfg.tokenizer_cache_tokens});
            cfg.vocab_size = tokenizer->vocab_size();
            cfg.request_limits.vocab_size = cfg.vocab_size;
            // A checkpoint's vocabulary may be padded past the tokenizer's (Qwen's 151,936 rows
            // for 151,665 ids): those ids are valid in prompts and outputs, as in vLLM.
            if (checkpoint)
                cfg.request_limits.vocab_size =
                    std::max(cfg.request_limits.vocab_size, checkpoint->cfg.vocab);
            if (checkpoint && checkpoint->cfg.vocab < tokenizer->vocab_size())
                throw std::runtime_error("the tokenizer has " +
                                         std::to_string(tokenizer->vocab_size()) +
                                         " ids, more than the model's vocab_size " +
                                         std::to_string(checkpoint->cfg.vocab) + " (config.json)");
            LANES_LOG(info, "engine",
                      "tokenizer " << cfg.tokenizer << ": " << tokenizer->vocab_size() << " ids, "
                                   << tokenizer->eos_ids().size() << " end ids"
                                   << (tokenizer->has_chat_template() ? ", a chat template"
                                                                      : ", no chat template"));
        }
        cfg.kv_blocks = static_cast<std::int64_t>(
            replica::resolve_kv_blocks(cfg, replica::replica_model(cfg), kind));
        replica::replica_metrics metrics(cfg.model_name, static_cast<long>(cfg.block_size),
                                         static_cast<long>(cfg.kv_blocks));
        metrics.announce_scheduler(static_cast<long>(cfg.max_num_seqs),
                                   static_cast<long>(cfg.max_num_batched_tokens));
        replica::engine eng(cfg, metrics, replica::build_backend(cfg, kind));
        if (tokenizer)
            eng.use_vocabulary(
                replica::vocabulary(tokenizer, checkpoint ? checkpoint->cfg.vocab : 0));
        std::unique_ptr<replica::kv_event_publisher> events;
        if (!cfg.kv_events.endpoint.empty()) {
            events = std::make_unique<replica::kv_event_publisher>(cfg.kv_events);
            auto& dropped =
                metrics.announce_kv_events(events->endpoint(), events->replay_endpoint());
            eng.publish_kv_events(
                [p = events.get(), &dropped](common::kv_events::batch b) {
                    if (!p->publish(std::move(b)))
                        dropped.inc();
                },
                !cfg.kv_events.replay_endpoint.empty());
        }
        eng.start();
        replica::api front(cfg, eng, metrics);
        // Owned through a pointer so it can be destroyed (with every pending coroutine frame)
        // while the objects those frames refer to still exist.
        auto io_owner = std::make_unique<boost::asio::io_context>(static_cast<int>(cfg.threads));
        boost::asio::io_context& io = *io_owner;
        cfg.http.threads = static_cast<unsigned>(cfg.threads);
        const auto fds = common::http::raise_open_file_limit();
        if (cfg.http.max_connections == 0)
            cfg.http.max_connections = common::http::fitting_max_connections(fds.soft, 1);
        common::http::grow_descriptor_table(cfg.http.descriptor_table);
        common::http::server server(
            io, cfg.http,
            [&front](common::http::request& req, common::http::response_writer& out) {
                return front.handle(req, out);
            },
            "lanes-replica", common::openai::error_page);
        server.listen(cfg.host, cfg.port);
        common::http::shutdown_steps steps;
        steps.on_hangup = [&server] { server.reload_tls(); };
        const int code = common::http::run_until_signal(
            io, static_cast<unsigned>(cfg.threads), cfg.http.shutdown_grace, [&] { server.stop(); },
            [&] { return server.active_requests() == 0; }, steps);
        eng.stop();
        server.release_listener();
        io_owner.reset();
        return code;
    } catch (const std::exception& e) {
        common::log::flush();
        // (A listener's message already starts with the program's name.)
        const std::string_view what = e.what();
        std::fprintf(stderr, "%s%s\n",
                     what.starts_with("lanes-replica ") ? "" : "lanes-replica: ", e.what());
        return 1;
    }
}
