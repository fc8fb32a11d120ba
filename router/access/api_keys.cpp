#include "router/access/api_keys.hpp"

#include "common/log.hpp"

#include <charconv>
#include <cstring>
#include <fstream>
#include <sstream>

namespace lanes::router {

namespace {

bool valid_name(std::string_view name) {
    if (name.empty() || name.size() > 64)
        return false;
    for (const char c : name)
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '.' || c == '_' || c == '-'))
            return false;
    return true;
}

// A limit's value: a finite number > 0.
bool parse_limit(std::string_view text, double& out) {
    const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), out);
    return ec == std::errc{} && end == text.data() + text.size() && out > 0 && out < 1e15;
}

std::vector<std::string_view> words(std::string_view line) {
    std::vector<std::string_view> out;
    std::size_t i = 0;
    while (i < line.size()) {
        while (i < line.size() && (line[i] == ' ' || line[i] == '\t'))
            ++i;
        const std::size_t start = i;
        while (i < line.size() && line[i] != ' ' && line[i] != '\t')
            ++i;
        if (i > start)
            out.push_back(line.substr(start, i - start));
    }
    return out;
}

} // namespace

std::size_t key_table::digest_hash::operator()(const common::access::digest& d) const {
    std::size_t h;
    std::memcpy(&h, d.data(), sizeof h); // a digest's bytes are as good as any hash of them
    return h;
}

void key_table::parse(std::string_view text, std::string_view source,
                      std::vector<std::string>& errors, bool comma_separated) {
    std::size_t number = 0;
    while (!text.empty()) {
        std::size_t end = comma_separated ? text.find_first_of(",\n") : text.find('\n');
        std::string_view line = text.substr(0, end);
        text = end == std::string_view::npos ? std::string_view{} : text.substr(end + 1);
        ++number;
        if (const auto hash = line.find('#'); hash != std::string_view::npos)
            line = line.substr(0, hash);
        if (!line.empty() && line.back() == '\r')
            line.remove_suffix(1);
        const auto w = words(line);
        if (w.empty())
            continue;
        const std::string where =
            std::string(source) + (comma_separated ? " entry " : " line ") + std::to_string(number);
        auto key = std::make_shared<api_key>();
        key->digest = common::access::sha256(w[0]);
        bool ok = true;
        for (std::size_t i = 1; i < w.size(); ++i) {
            const auto eq = w[i].find('=');
            if (eq == std::string_view::npos) {
                if (i != 1 || !valid_name(w[i])) {
                    errors.push_back(where + ": a name is 1-64 of A-Z a-z 0-9 . _ - and comes "
                                             "right after the key");
                    ok = false;
                }
                key->name = std::string(w[i]);
                continue;
            }
            const std::string_view what = w[i].substr(0, eq);
            double value = 0;
            if (!parse_limit(w[i].substr(eq + 1), value)) {
                errors.push_back(where + ": " + std::string(what) + " must be a number > 0");
                ok = false;
            } else if (what == "rps") {
                key->limits.rps = value;
            } else if (what == "burst") {
                key->limits.burst = value;
            } else if (what == "tpm") {
                key->limits.tpm = value;
            } else {
                errors.push_back(where + ": unknown setting '" + std::string(what) +
                                 "' (rps, burst, tpm)");
                ok = false;
            }
        }
        if (!ok)
            continue;
        if (key->name.empty())
            key->name = "key-" + common::access::hex(key->digest, 4);
        if (by_digest_.count(key->digest)) {
            errors.push_back(where + ": the same key is listed twice");
            continue;
        }
        for (const auto& [d, other] : by_digest_)
            if (other->name == key->name) {
                errors.push_back(where + ": the name '" + key->name + "' is taken");
                ok = false;
                break;
            }
        if (ok)
            by_digest_.emplace(key->digest, std::move(key));
    }
}

std::shared_ptr<const api_key> key_table::find(std::string_view token) const {
    if (token.empty())
        return nullptr;
    const common::access::digest d = common::access::sha256(token);
    const auto it = by_digest_.find(d);
    // The lookup found the digest; the constant-time compare is what decides.
    if (it == by_digest_.end() || !common::access::same(it->first, d))
        return nullptr;
    return it->second;
}

bool key_store::load(std::vector<std::string>& errors) {
    const std::size_t before = errors.size();
    auto next = std::make_shared<key_table>();
    if (!file_.empty()) {
        std::ifstream in(file_);
        if (!in) {
            errors.push_back("--api-key-file: cannot read " + file_);
        } else {
            std::stringstream text;
            text << in.rdbuf();
            next->parse(text.str(), file_, errors);
        }
    }
    if (!env_text_.empty())
        next->parse(env_text_, "LANES_API_KEYS", errors, true);
    if (errors.size() == before && next->empty())
        errors.push_back("API keys are configured but none was found (" +
                         (file_.empty() ? std::string("LANES_API_KEYS") : file_) + ")");
    if (errors.size() != before)
        return false;
    LANES_LOG(info, "router",
              next->size() << " API key(s) loaded" << (file_.empty() ? "" : " from " + file_)
                           << (env_text_.empty() ? "" : " and LANES_API_KEYS"));
    table_.store(std::move(next));
    return true;
}

} // namespace lanes::router
