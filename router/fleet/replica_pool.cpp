#include "router/fleet/replica_pool.hpp"

#include <algorithm>

namespace lanes::router {

replica::replica(common::http::url u, health_config health_cfg)
    : health(health_cfg)
    , url_(std::move(u))
    , authority_(url_.authority())
    , id_(url_.str()) {}

scraped_stats replica::stats() const {
    std::lock_guard lock(mutex_);
    return stats_;
}

void replica::note_error(std::string what) {
    constexpr std::size_t longest = 200; // a replica's error body is not copied whole
    if (what.size() > longest)
        what.resize(longest);
    std::lock_guard lock(mutex_);
    error_at_ = std::chrono::system_clock::now();
    error_ = std::move(what);
}

std::pair<std::chrono::system_clock::time_point, std::string> replica::last_error() const {
    std::lock_guard lock(mutex_);
    return {error_at_, error_};
}

void replica::set_stats(const scraped_stats& s) {
    std::lock_guard lock(mutex_);
    stats_ = s;
    stats_version_.fetch_add(1, std::memory_order_release);
}

bool model_list::serves(std::string_view model) const {
    return !known || ids.empty() || std::find(ids.begin(), ids.end(), model) != ids.end();
}

std::shared_ptr<const model_list> replica::models() const {
    std::lock_guard lock(mutex_);
    return models_ ? models_ : std::make_shared<const model_list>();
}

void replica::set_models(model_list m) {
    auto next = std::make_shared<const model_list>(std::move(m));
    std::lock_guard lock(mutex_);
    models_ = std::move(next);
    models_version_.fetch_add(1, std::memory_order_release);
}

std::unique_ptr<common::http::client_connection>
replica::take_idle(const boost::asio::any_io_executor& user) {
    const auto& on = boost::asio::query(user, boost::asio::execution::context);
    std::lock_guard lock(mutex_);
    const auto pop_open = [this](idle_list& list) {
        std::unique_ptr<common::http::client_connection> conn;
        while (!conn && !list.conns.empty()) {
            conn = std::move(list.conns.back());
            list.conns.pop_back();
            --idle_count_;
            if (!conn->quiet()) // closed, or bytes nobody asked for: not reused
                conn.reset();
        }
        return conn;
    };
    for (auto& list : idle_)
        if (list.context == &on)
            if (auto conn = pop_open(list))
                return conn;
    for (auto& list : idle_)
        if (list.context != &on)
            if (auto conn = pop_open(list))
                return conn;
    return nullptr;
}

void replica::give_back(std::unique_ptr<common::http::client_connection> conn,
                        std::size_t max_idle) {
    std::lock_guard lock(mutex_);
    if (idle_count_ >= max_idle || !conn->is_open())
        return;
    const auto* context = &conn->context();
    auto list = std::find_if(idle_.begin(), idle_.end(),
                             [context](const idle_list& l) { return l.context == context; });
    if (list == idle_.end())
        list = idle_.insert(idle_.end(), idle_list{context, {}});
    list->conns.push_back(std::move(conn));
    ++idle_count_;
}

void replica::drop_idle() {
    std::lock_guard lock(mutex_);
    idle_.clear();
    idle_count_ = 0;
}

bool replica_pool::add(const common::http::url& u, std::string source) {
    auto r = std::make_shared<replica>(u, health_cfg_);
    r->source = std::move(source);
    std::unique_lock lock(mutex_);
    for (const auto& existing : replicas_)
        if (existing->id() == r->id())
            return false;
    replicas_.push_back(std::move(r));
    version_.fetch_add(1);
    return true;
}

bool replica_pool::remove(const std::string& id) {
    std::unique_lock lock(mutex_);
    const auto before = replicas_.size();
    std::erase_if(replicas_, [&](const auto& r) { return r->id() == id; });
    if (replicas_.size() == before)
        return false;
    version_.fetch_add(1);
    lock.unlock();
    recompute_fleet(); // the one that leaves may have been the only one with another model
    return true;
}

std::shared_ptr<replica> replica_pool::find(const std::string& id) const {
    std::shared_lock lock(mutex_);
    for (const auto& r : replicas_)
        if (r->id() == id)
            return r;
    return nullptr;
}

std::vector<std::shared_ptr<replica>> replica_pool::all() const {
    std::shared_lock lock(mutex_);
    return replicas_;
}

std::string replica_pool::only_model() const {
    std::lock_guard lock(fleet_mutex_);
    return only_model_;
}

bool replica_pool::lists(std::string_view model) const {
    std::lock_guard lock(fleet_mutex_);
    return std::binary_search(listed_.begin(), listed_.end(), model);
}

hash_units replica_pool::units() const {
    return {text_block_bytes_.load(std::memory_order_relaxed),
            id_block_tokens_.load(std::memory_order_relaxed),
            engine_units_.load(std::memory_order_relaxed)};
}

void replica_pool::update_fleet(std::size_t default_block_size, std::size_t bytes_per_token) {
    default_block_size_.store(default_block_size, std::memory_order_relaxed);
    bytes_per_token_.store(bytes_per_token, std::memory_order_relaxed);
    recompute_fleet();
}

void replica_pool::recompute_fleet() {
    const std::size_t default_block_size = default_block_size_.load(std::memory_order_relaxed);
    const std::size_t bytes_per_token = bytes_per_token_.load(std::memory_order_relaxed);
    // The one model every read list names (an unread list serves any, so it does not count).
    std::string only;
    bool several = false;
    std::vector<std::string> listed;
    for (const auto& r : all()) {
        // Held for the loop: a range over r->models()->ids would outlive the list (a model
        // refresh replaces it on another thread).
        const auto models = r->models();
        for (const auto& id : models->ids) {
            if (only.empty())
                only = id;
            else if (id != only)
                several = true;
            listed.push_back(id);
        }
    }
    std::sort(listed.begin(), listed.end());
    listed.erase(std::unique(listed.begin(), listed.end()), listed.end());
    {
        std::lock_guard lock(fleet_mutex_);
        only_model_ = several ? std::string() : std::move(only);
        listed_ = std::move(listed);
    }
    // An engine's units win: a lanes replica behind the same router only loses exactness.
    std::optional<std::size_t> engine_block, lanes_block;
    bool any_engine = false;
    for (const auto& r : all()) {
        const auto m = r->models();
        if (!m->known)
            continue;
        const auto block = r->stats().block_size;
        if (m->lanes) {
            if (block && *block > 0 && !lanes_block)
                lanes_block = static_cast<std::size_t>(*block);
        } else {
            any_engine = true;
            if (block && *block > 0 && !engine_block)
                engine_block = static_cast<std::size_t>(*block);
        }
    }
    if (any_engine) {
        const std::size_t tokens = engine_block.value_or(default_block_size);
        id_block_tokens_.store(tokens, std::memory_order_relaxed);
        text_block_bytes_.store(tokens * std::max<std::size_t>(bytes_per_token, 1),
                                std::memory_order_relaxed);
    } else {
        const std::size_t tokens = lanes_block.value_or(default_block_size);
        id_block_tokens_.store(tokens, std::memory_order_relaxed);
        text_block_bytes_.store(tokens, std::memory_order_relaxed);
    }
    engine_units_.store(any_engine, std::memory_order_relaxed);
}

} // namespace lanes::router
