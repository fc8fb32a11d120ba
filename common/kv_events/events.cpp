#include "common/kv_events/events.hpp"

#include "common/kv_events/msgpack.hpp"

namespace lanes::common::kv_events {

namespace mp = common::msgpack;

engine_hash int_hash(std::uint64_t h) {
    engine_hash out(8, '\0');
    for (int k = 7; k >= 0; --k, h >>= 8)
        out[static_cast<std::size_t>(k)] = static_cast<char>(h & 0xff);
    return out;
}

namespace {

void write_hash(mp::writer& w, const engine_hash& h) {
    if (h.size() == 8) {
        std::uint64_t v = 0;
        for (const char c : h)
            v = (v << 8) | static_cast<std::uint8_t>(c);
        w.uint(v);
    } else {
        w.bin(h);
    }
}

void write_hashes(mp::writer& w, const std::vector<engine_hash>& hs) {
    w.array(hs.size());
    for (const auto& h : hs)
        write_hash(w, h);
}

template <typename T>
void write_optional_str(mp::writer& w, const std::optional<T>& s) {
    if (s)
        w.str(*s);
    else
        w.nil();
}

// What a decode reads through: one parsed document and the error of the first problem.
struct reader {
    const mp::document& doc;
    const decode_limits& lim;
    std::string& error;

    bool fail(std::string why) {
        if (error.empty())
            error = std::move(why);
        return false;
    }
    bool hash(const mp::value& v, engine_hash& out) {
        if (v.k == mp::kind::uint) {
            out = int_hash(v.u);
            return true;
        }
        if (v.k == mp::kind::sint) { // a signed 64-bit view of the same bits
            out = int_hash(static_cast<std::uint64_t>(v.i));
            return true;
        }
        if (v.k == mp::kind::bin || v.k == mp::kind::str) {
            if (v.s.empty() || v.s.size() > lim.max_hash_bytes)
                return fail("a block hash of " + std::to_string(v.s.size()) + " bytes");
            out.assign(v.s);
            return true;
        }
        return fail("a block hash that is neither an integer nor bytes");
    }
    bool hashes(const mp::value& v, std::vector<engine_hash>& out) {
        if (v.k != mp::kind::array)
            return fail("block_hashes is not an array");
        out.resize(v.count);
        for (std::size_t i = 0; i < v.count; ++i)
            if (!hash(doc.item(v, i), out[i]))
                return false;
        return true;
    }
    bool optional_str(const mp::value* v, std::optional<std::string>& out) {
        if (!v || v->k == mp::kind::nil)
            return true;
        if (v->k != mp::kind::str)
            return fail("a string field that is not a string");
        out = std::string(v->s);
        return true;
    }
    bool optional_int(const mp::value* v, std::optional<std::int64_t>& out) {
        if (!v || v->k == mp::kind::nil)
            return true;
        if (v->k == mp::kind::uint && v->u <= INT64_MAX)
            out = static_cast<std::int64_t>(v->u);
        else if (v->k == mp::kind::sint)
            out = v->i;
        else
            return fail("an integer field that is not an integer");
        return true;
    }

    // The fields of an event by name, from either form: `at(i, name)` is the i-th field after
    // the tag in the array form, or the field `name` in the map form.
    struct fields {
        const mp::document& doc;
        const mp::value& v;
        bool array;
        const mp::value* at(std::size_t i, std::string_view name) const {
            if (array)
                return i + 1 < v.count ? &doc.item(v, i + 1) : nullptr;
            return doc.find(v, name);
        }
    };

    bool stored(const fields& f, block_stored& out) {
        const mp::value* hs = f.at(0, "block_hashes");
        const mp::value* tokens = f.at(2, "token_ids");
        const mp::value* size = f.at(3, "block_size");
        if (!hs || !tokens || !size)
            return fail("BlockStored without block_hashes, token_ids or block_size");
        if (!hashes(*hs, out.block_hashes))
            return false;
        if (const mp::value* p = f.at(1, "parent_block_hash"); p && p->k != mp::kind::nil) {
            out.parent.emplace();
            if (!hash(*p, *out.parent))
                return false;
        }
        if (tokens->k != mp::kind::array)
            return fail("token_ids is not an array");
        out.token_ids.resize(tokens->count);
        for (std::size_t i = 0; i < tokens->count; ++i) {
            const mp::value& t = doc.item(*tokens, i);
            if (t.k != mp::kind::uint || t.u > UINT32_MAX)
                return fail("a token id that is not a 32-bit unsigned integer");
            out.token_ids[i] = static_cast<std::uint32_t>(t.u);
        }
        if (size->k != mp::kind::uint || size->u == 0 || size->u > (1u << 20))
            return fail("block_size is not a positive integer");
        out.block_size = static_cast<std::size_t>(size->u);
        if (out.token_ids.size() != out.block_size * out.block_hashes.size())
            return fail("BlockStored with " + std::to_string(out.token_ids.size()) +
                        " token ids for " + std::to_string(out.block_hashes.size()) +
                        " blocks of " + std::to_string(out.block_size));
        // A field of another kind where lanes puts the salt's hash (some other reader's extra
        // field) is not lanes' and is left alone.
        if (const mp::value* salt = f.at(7, "cache_salt_hash"); salt && salt->k == mp::kind::uint)
            out.cache_salt_hash = salt->u;
        return optional_int(f.at(4, "lora_id"), out.lora_id) &&
               optional_str(f.at(5, "medium"), out.medium) &&
               optional_str(f.at(6, "lora_name"), out.lora_name);
    }

    bool one_event(const mp::value& v, event& out) {
        const bool array = v.k == mp::kind::array;
        if (!array && v.k != mp::kind::map)
            return fail("an event that is neither an array nor a map");
        const mp::value* tag =
            array ? (v.count > 0 ? &doc.item(v, 0) : nullptr) : doc.find(v, "type");
        if (!tag || tag->k != mp::kind::str)
            return fail("an event without its type tag");
        const fields f{doc, v, array};
        if (tag->s == "BlockStored") {
            block_stored s;
            if (!stored(f, s))
                return false;
            out = std::move(s);
            return true;
        }
        if (tag->s == "BlockRemoved") {
            block_removed r;
            const mp::value* hs = f.at(0, "block_hashes");
            if (!hs)
                return fail("BlockRemoved without block_hashes");
            if (!hashes(*hs, r.block_hashes) || !optional_str(f.at(1, "medium"), r.medium))
                return false;
            out = std::move(r);
            return true;
        }
        if (tag->s == "AllBlocksCleared") {
            out = all_blocks_cleared{};
            return true;
        }
        return fail("an event of unknown type '" + std::string(tag->s.substr(0, 64)) + "'");
    }
};

} // namespace

std::string encode(const batch& b) {
    std::string out;
    mp::writer w(out);
    w.array(3);
    w.float64(b.ts);
    w.array(b.events.size());
    for (const auto& e : b.events) {
        if (const auto* s = std::get_if<block_stored>(&e)) {
            w.array(s->cache_salt_hash ? 9 : s->lora_name ? 8 : 7);
            w.str("BlockStored");
            write_hashes(w, s->block_hashes);
            if (s->parent)
                write_hash(w, *s->parent);
            else
                w.nil();
            w.array(s->token_ids.size());
            for (const auto t : s->token_ids)
                w.uint(t);
            w.uint(s->block_size);
            if (s->lora_id)
                w.sint(*s->lora_id);
            else
                w.nil();
            write_optional_str(w, s->medium);
            if (s->lora_name || s->cache_salt_hash)
                write_optional_str(w, s->lora_name);
            if (s->cache_salt_hash)
                w.uint(*s->cache_salt_hash);
        } else if (const auto* r = std::get_if<block_removed>(&e)) {
            w.array(3);
            w.str("BlockRemoved");
            write_hashes(w, r->block_hashes);
            write_optional_str(w, r->medium);
        } else {
            w.array(1);
            w.str("AllBlocksCleared");
        }
    }
    if (b.data_parallel_rank)
        w.sint(*b.data_parallel_rank);
    else
        w.nil();
    return out;
}

bool decode(std::string_view payload, batch& out, std::string& error, const decode_limits& lim) {
    error.clear();
    out = batch{};
    if (payload.size() > lim.max_bytes) {
        error = "a payload of " + std::to_string(payload.size()) + " bytes";
        return false;
    }
    mp::document doc;
    if (!doc.parse(payload, mp::limits{}, error))
        return false;
    reader rd{doc, lim, error};
    const mp::value& root = doc.root();
    const mp::value *ts = nullptr, *events = nullptr, *rank = nullptr;
    if (root.k == mp::kind::array) {
        if (root.count < 2)
            return rd.fail("a batch of fewer than 2 fields");
        ts = &doc.item(root, 0);
        events = &doc.item(root, 1);
        rank = root.count > 2 ? &doc.item(root, 2) : nullptr;
    } else if (root.k == mp::kind::map) {
        ts = doc.find(root, "ts");
        events = doc.find(root, "events");
        rank = doc.find(root, "data_parallel_rank");
    } else {
        return rd.fail("a batch that is neither an array nor a map");
    }
    if (!ts || !events || events->k != mp::kind::array)
        return rd.fail("a batch without its ts and events");
    if (ts->k == mp::kind::float64)
        out.ts = ts->f;
    else if (ts->k == mp::kind::uint)
        out.ts = static_cast<double>(ts->u);
    else
        return rd.fail("ts is not a number");
    if (events->count > lim.max_events)
        return rd.fail("a batch of " + std::to_string(events->count) + " events");
    if (!rd.optional_int(rank, out.data_parallel_rank))
        return false;
    out.events.resize(events->count);
    for (std::size_t i = 0; i < events->count; ++i)
        if (!rd.one_event(doc.item(*events, i), out.events[i]))
            return false;
    return true;
}

std::string sequence_frame(std::int64_t seq) {
    return int_hash(static_cast<std::uint64_t>(seq));
}

std::optional<std::int64_t> read_sequence(std::string_view frame) {
    if (frame.size() != 8)
        return std::nullopt;
    std::uint64_t v = 0;
    for (const char c : frame)
        v = (v << 8) | static_cast<std::uint8_t>(c);
    return static_cast<std::int64_t>(v);
}

} // namespace lanes::common::kv_events
