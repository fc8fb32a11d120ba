#include "router/request/remote_tokenizer.hpp"

#include "common/http/fetch.hpp"
#include "common/json_depth.hpp"

#include <nlohmann/json.hpp>
#include <xxhash.h>

#include <algorithm>

namespace lanes::router {

namespace http = common::http;
using json = nlohmann::json;

std::optional<tokenize_query> make_tokenize_query(std::string_view request_body, bool chat,
                                                  const model_namer& model_of,
                                                  tokenize_bounds bounds) {
    // Bounded before the DOM is built (its copies and dump() recurse, and 8 MiB of "[]," would
    // build millions of nodes): such a body is routed on its text.
    if (!common::measure_json(request_body, bounds.max_depth, bounds.max_values).within)
        return std::nullopt;
    const json j = json::parse(request_body, nullptr, false);
    if (!j.is_object())
        return std::nullopt;
    json t = json::object();
    std::optional<std::string> named;
    if (const auto m = j.find("model"); m != j.end() && m->is_string())
        named = m->get<std::string>();
    if (const std::string model = model_of(named); !model.empty())
        t["model"] = model;
    if (chat) {
        const auto m = j.find("messages");
        if (m == j.end() || !m->is_array() || m->empty())
            return std::nullopt;
        t["messages"] = *m;
        // What else the engine's chat template renders before the answer.
        for (const char* field :
             {"tools", "chat_template", "chat_template_kwargs", "continue_final_message"})
            if (const auto f = j.find(field); f != j.end() && !f->is_null())
                t[field] = *f;
        const auto g = j.find("add_generation_prompt");
        t["add_generation_prompt"] = g == j.end() || !g->is_boolean() || g->get<bool>();
    } else {
        const auto p = j.find("prompt");
        if (p == j.end() || !p->is_string())
            return std::nullopt; // token ids already, or a batch of prompts
        t["prompt"] = *p;
        if (const auto f = j.find("add_special_tokens"); f != j.end() && f->is_boolean())
            t["add_special_tokens"] = *f;
    }
    tokenize_query q;
    q.body = t.dump();
    const XXH128_hash_t h = XXH3_128bits(q.body.data(), q.body.size());
    q.key_lo = h.low64;
    q.key_hi = h.high64;
    return q;
}

std::optional<std::vector<std::uint32_t>> read_tokenize_answer(std::string_view body,
                                                               std::size_t max_tokens) {
    // {"tokens": [...], ...}: nothing in an answer nests deeper than a few levels, and a token
    // costs at least two bytes, so the DOM stays within the body's size.
    if (common::nests_deeper_than(body, 4))
        return std::nullopt;
    const json j = json::parse(body, nullptr, false);
    if (!j.is_object())
        return std::nullopt;
    const auto t = j.find("tokens");
    if (t == j.end() || !t->is_array() || t->size() > max_tokens)
        return std::nullopt;
    std::vector<std::uint32_t> ids;
    ids.reserve(t->size());
    for (const auto& v : *t) {
        if (!v.is_number_unsigned() || v.get<std::uint64_t>() > UINT32_MAX)
            return std::nullopt;
        ids.push_back(static_cast<std::uint32_t>(v.get<std::uint64_t>()));
    }
    return ids;
}

remote_tokenizer::remote_tokenizer(tokenizer_settings s)
    : settings_(std::move(s))
    , target_(http::parse_url(settings_.endpoint)) {}

remote_tokenizer::~remote_tokenizer() = default;

std::optional<std::vector<std::uint32_t>> remote_tokenizer::cached(const tokenize_query& q) {
    std::lock_guard lock(mutex_);
    const auto it = index_.find({q.key_lo, q.key_hi});
    if (it == index_.end()) {
        ++counts_.misses;
        return std::nullopt;
    }
    ++counts_.hits;
    lru_.splice(lru_.begin(), lru_, it->second);
    return it->second->ids;
}

void remote_tokenizer::remember(const tokenize_query& q, const std::vector<std::uint32_t>& ids) {
    if (settings_.cache_entries == 0)
        return;
    std::lock_guard lock(mutex_);
    const std::pair key{q.key_lo, q.key_hi};
    if (const auto it = index_.find(key); it != index_.end()) {
        lru_.splice(lru_.begin(), lru_, it->second);
        return;
    }
    lru_.push_front({q.key_lo, q.key_hi, ids});
    index_.emplace(key, lru_.begin());
    while (lru_.size() > settings_.cache_entries) {
        index_.erase({lru_.back().lo, lru_.back().hi});
        lru_.pop_back();
    }
}

std::unique_ptr<http::client_connection> remote_tokenizer::take_connection() {
    std::lock_guard lock(mutex_);
    if (idle_.empty())
        return nullptr;
    auto c = std::move(idle_.back());
    idle_.pop_back();
    return c;
}

void remote_tokenizer::give_back(std::unique_ptr<http::client_connection> c) {
    if (!c || !c->is_open())
        return;
    std::lock_guard lock(mutex_);
    if (idle_.size() < settings_.idle_connections)
        idle_.push_back(std::move(c));
}

boost::asio::awaitable<std::optional<std::vector<std::uint32_t>>>
remote_tokenizer::fetch(boost::asio::any_io_executor ex, const tokenize_query& q) {
    const auto& target = target_;
    if (!target) {
        std::lock_guard lock(mutex_);
        ++counts_.errors;
        co_return std::nullopt;
    }
    http::fetch_options opts;
    opts.connect_timeout = std::min(settings_.timeout, opts.connect_timeout);
    opts.total_timeout = settings_.timeout;
    opts.body = q.body;
    opts.keep_alive = true;
    auto conn = take_connection();
    const http::fetch_result res = co_await http::fetch_on(
        conn, ex, *target, http::beast_http::verb::post, target->base_path + "/tokenize", opts);
    give_back(std::move(conn));
    std::optional<std::vector<std::uint32_t>> ids;
    if (!res.ec && res.status == 200)
        ids = read_tokenize_answer(res.body, settings_.max_tokens);
    if (!ids) {
        std::lock_guard lock(mutex_);
        ++counts_.errors;
        co_return std::nullopt;
    }
    remember(q, *ids);
    co_return ids;
}

remote_tokenizer::counts remote_tokenizer::totals() const {
    std::lock_guard lock(mutex_);
    return counts_;
}

} // namespace lanes::router
