#include "replica/models/safetensors.hpp"

#include <nlohmann/json.hpp>

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <fstream>
#include <limits>
#include <set>
#include <stdexcept>

namespace lanes::replica {

namespace {

struct dtype_info {
    std::string_view name;
    tensor_dtype dtype;
    std::size_t bytes;
};

// Every dtype the format defines, so that a header is checked whole even where the tensor is
// one lanes cannot compute with (that refusal comes later, naming the tensor).
constexpr dtype_info dtypes[] = {
    {"F32", tensor_dtype::f32, 4},      {"F16", tensor_dtype::f16, 2},
    {"BF16", tensor_dtype::bf16, 2},    {"F64", tensor_dtype::f64, 8},
    {"I64", tensor_dtype::i64, 8},      {"I32", tensor_dtype::i32, 4},
    {"I16", tensor_dtype::i16, 2},      {"I8", tensor_dtype::i8, 1},
    {"U8", tensor_dtype::u8, 1},        {"U16", tensor_dtype::u16, 2},
    {"U32", tensor_dtype::u32, 4},      {"U64", tensor_dtype::u64, 8},
    {"BOOL", tensor_dtype::boolean, 1}, {"F8_E4M3", tensor_dtype::f8, 1},
    {"F8_E5M2", tensor_dtype::f8, 1},
};

[[noreturn]] void fail(const std::string& label, const std::string& what) {
    throw std::runtime_error(label + ": " + what);
}

std::size_t as_size(const nlohmann::json& v, const std::string& label, const std::string& what) {
    if (!v.is_number_unsigned())
        fail(label, what + " must be a non-negative integer");
    return v.get<std::size_t>();
}

} // namespace

std::string_view to_string(tensor_dtype d) {
    for (const auto& i : dtypes)
        if (i.dtype == d)
            return i.name;
    return "?";
}

std::size_t dtype_bytes(tensor_dtype d) {
    for (const auto& i : dtypes)
        if (i.dtype == d)
            return i.bytes;
    return 1;
}

float bf16_to_f32(std::uint16_t v) {
    return std::bit_cast<float>(static_cast<std::uint32_t>(v) << 16);
}

float f16_to_f32(std::uint16_t v) {
    const std::uint32_t sign = (v & 0x8000u) << 16;
    const std::uint32_t exp = (v >> 10) & 0x1f;
    const std::uint32_t man = v & 0x3ffu;
    if (exp == 0x1f) // inf or NaN
        return std::bit_cast<float>(sign | 0x7f800000u | (man << 13));
    if (exp != 0) // normal: rebias 15 -> 127
        return std::bit_cast<float>(sign | ((exp + 112) << 23) | (man << 13));
    // zero or subnormal: man · 2^-24, exact in fp32
    const float mag = std::ldexp(static_cast<float>(man), -24);
    return sign ? -mag : mag;
}

std::uint16_t f32_to_bf16(float f) {
    const auto u = std::bit_cast<std::uint32_t>(f);
    if (std::isnan(f))
        return static_cast<std::uint16_t>((u >> 16) | 0x40);
    const std::uint32_t rounding = 0x7fffu + ((u >> 16) & 1u);
    return static_cast<std::uint16_t>((u + rounding) >> 16);
}

std::uint16_t f32_to_f16(float f) {
    const auto u = std::bit_cast<std::uint32_t>(f);
    const auto sign = static_cast<std::uint16_t>((u >> 16) & 0x8000u);
    if (std::isnan(f))
        return static_cast<std::uint16_t>(sign | 0x7e00u);
    const float a = std::fabs(f);
    if (a >= 65520.0f) // rounds past the largest half
        return static_cast<std::uint16_t>(sign | 0x7c00u);
    if (a < std::ldexp(1.0f, -14)) { // subnormal half: a multiple of 2^-24, rounded to even
        const float scaled = std::nearbyint(a * std::ldexp(1.0f, 24));
        return static_cast<std::uint16_t>(sign | static_cast<std::uint16_t>(scaled));
    }
    const std::uint32_t au = std::bit_cast<std::uint32_t>(a);
    // Drop 13 mantissa bits with round to nearest even, then rebias 127 -> 15.
    const std::uint32_t rounded = au + 0xfffu + ((au >> 13) & 1u);
    return static_cast<std::uint16_t>(sign | ((rounded >> 13) - (112u << 10)));
}

std::size_t tensor_view::numel() const {
    std::size_t n = 1;
    for (const auto d : shape)
        n *= d;
    return n;
}

void tensor_view::to_f32(std::span<float> out) const {
    const std::size_t n = numel();
    if (out.size() != n)
        throw std::runtime_error("tensor " + name + ": asked for " + std::to_string(out.size()) +
                                 " values, holds " + std::to_string(n));
    if (n == 0) // an empty tensor: nothing to copy (and no pointer to copy from)
        return;
    const std::byte* p = bytes.data();
    switch (dtype) {
    case tensor_dtype::f32:
        std::memcpy(out.data(), p, n * sizeof(float));
        return;
    case tensor_dtype::bf16:
    case tensor_dtype::f16:
        for (std::size_t i = 0; i < n; ++i) {
            std::uint16_t v;
            std::memcpy(&v, p + 2 * i, 2);
            out[i] = dtype == tensor_dtype::bf16 ? bf16_to_f32(v) : f16_to_f32(v);
        }
        return;
    default:
        throw std::runtime_error("tensor " + name + " is " + std::string(to_string(dtype)) +
                                 "; lanes reads F32, F16 and BF16 weights only");
    }
}

std::vector<float> tensor_view::to_f32() const {
    std::vector<float> v(numel());
    to_f32(v);
    return v;
}

std::unique_ptr<safetensors_file> safetensors_file::open(const std::string& path) {
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        fail(path, std::string("cannot open: ") + std::strerror(errno));
    struct stat st {};
    if (::fstat(fd, &st) != 0) {
        ::close(fd);
        fail(path, std::string("cannot stat: ") + std::strerror(errno));
    }
    std::unique_ptr<safetensors_file> f(new safetensors_file());
    f->path_ = path;
    f->map_size_ = static_cast<std::size_t>(st.st_size);
    if (f->map_size_ > 0) {
        void* m = ::mmap(nullptr, f->map_size_, PROT_READ, MAP_PRIVATE, fd, 0);
        if (m == MAP_FAILED) {
            ::close(fd);
            fail(path, std::string("cannot map: ") + std::strerror(errno));
        }
        f->map_ = m;
    }
    ::close(fd); // the mapping keeps the file
    f->parse_header({static_cast<const std::byte*>(f->map_), f->map_size_});
    return f;
}

std::unique_ptr<safetensors_file> safetensors_file::parse(std::span<const std::byte> data,
                                                          const std::string& label) {
    std::unique_ptr<safetensors_file> f(new safetensors_file());
    f->path_ = label;
    f->parse_header(data);
    return f;
}

safetensors_file::~safetensors_file() {
    if (map_ != nullptr)
        ::munmap(map_, map_size_);
}

void safetensors_file::parse_header(std::span<const std::byte> data) {
    if (data.size() < 8)
        fail(path_, "shorter than the 8-byte header length (" + std::to_string(data.size()) +
                        " bytes): not a safetensors file");
    std::uint64_t n = 0;
    for (int i = 7; i >= 0; --i)
        n = (n << 8) | static_cast<std::uint8_t>(data[static_cast<std::size_t>(i)]);
    if (n > max_header_bytes)
        fail(path_, "header length " + std::to_string(n) + " is past the " +
                        std::to_string(max_header_bytes) + "-byte limit");
    if (n > data.size() - 8)
        fail(path_, "header length " + std::to_string(n) + " runs past the end of the file (" +
                        std::to_string(data.size()) + " bytes): truncated?");
    const auto* text = reinterpret_cast<const char*>(data.data() + 8);
    nlohmann::json header;
    // nlohmann keeps the last of a repeated key; the format forbids repeats, so the top level's
    // keys are watched as they are parsed.
    std::set<std::string> keys;
    std::string repeated;
    auto watch = [&](int depth, nlohmann::json::parse_event_t event, nlohmann::json& parsed) {
        if (depth == 1 && event == nlohmann::json::parse_event_t::key && parsed.is_string() &&
            !keys.insert(parsed.get<std::string>()).second && repeated.empty())
            repeated = parsed.get<std::string>();
        return true;
    };
    try {
        header = nlohmann::json::parse(std::string_view(text, n), watch);
    } catch (const nlohmann::json::exception& e) {
        fail(path_, std::string("header is not valid JSON: ") + e.what());
    }
    if (!repeated.empty())
        fail(path_, "tensor " + repeated + " appears twice in the header");
    if (!header.is_object())
        fail(path_, "header is not a JSON object");
    const std::span<const std::byte> body = data.subspan(8 + n);
    struct range {
        std::size_t begin, end;
        const std::string* name;
    };
    std::vector<range> ranges;
    for (const auto& [name, t] : header.items()) {
        if (name == "__metadata__") {
            if (!t.is_object())
                fail(path_, "__metadata__ is not an object");
            for (const auto& [k, v] : t.items())
                if (v.is_string())
                    metadata_[k] = v.get<std::string>();
            continue;
        }
        const std::string label = "tensor " + name;
        if (!t.is_object() || !t.contains("dtype") || !t.contains("shape") ||
            !t.contains("data_offsets"))
            fail(path_, label + " lacks dtype, shape or data_offsets");
        tensor_view v;
        v.name = name;
        const auto& dt = t.at("dtype");
        const auto* info = std::find_if(std::begin(dtypes), std::end(dtypes),
                                        [&](const dtype_info& i) { return dt == i.name; });
        if (info == std::end(dtypes))
            fail(path_, label + " has unknown dtype " + dt.dump());
        v.dtype = info->dtype;
        const auto& shape = t.at("shape");
        if (!shape.is_array() || shape.size() > 8)
            fail(path_, label + ": shape must be an array of at most 8 dimensions");
        std::size_t bytes = info->bytes;
        for (const auto& d : shape) {
            const std::size_t dim = as_size(d, path_, label + " shape");
            if (dim != 0 && bytes > std::numeric_limits<std::size_t>::max() / dim)
                fail(path_, label + ": shape overflows");
            bytes *= dim;
            v.shape.push_back(dim);
        }
        const auto& off = t.at("data_offsets");
        if (!off.is_array() || off.size() != 2)
            fail(path_, label + ": data_offsets must be [begin, end]");
        const std::size_t begin = as_size(off[0], path_, label + " data_offsets");
        const std::size_t end = as_size(off[1], path_, label + " data_offsets");
        if (begin > end || end > body.size())
            fail(path_, label + ": data_offsets [" + std::to_string(begin) + ", " +
                            std::to_string(end) + ") lie outside the " +
                            std::to_string(body.size()) + " data bytes");
        if (end - begin != bytes)
            fail(path_, label + ": data_offsets hold " + std::to_string(end - begin) +
                            " bytes, its dtype and shape need " + std::to_string(bytes));
        v.bytes = body.subspan(begin, end - begin);
        const auto it = tensors_.emplace(name, std::move(v)).first;
        ranges.push_back({begin, end, &it->first});
    }
    // Ranges sorted by start must not overlap (empty tensors occupy nothing).
    std::sort(ranges.begin(), ranges.end(),
              [](const range& a, const range& b) { return a.begin < b.begin; });
    for (std::size_t i = 1; i < ranges.size(); ++i)
        if (ranges[i].begin < ranges[i - 1].end && ranges[i].begin != ranges[i].end)
            fail(path_, "tensor " + *ranges[i].name + " overlaps tensor " + *ranges[i - 1].name);
}

checkpoint_files::checkpoint_files(const std::string& dir) {
    const std::string index_path = dir + "/model.safetensors.index.json";
    std::ifstream index_file(index_path);
    std::map<std::string, std::string> weight_map;
    if (index_file) {
        nlohmann::json index;
        try {
            index = nlohmann::json::parse(index_file);
        } catch (const nlohmann::json::exception& e) {
            fail(index_path, std::string("not valid JSON: ") + e.what());
        }
        if (!index.is_object() || !index.contains("weight_map") || !index["weight_map"].is_object())
            fail(index_path, "has no weight_map object");
        std::set<std::string> shards;
        for (const auto& [name, file] : index["weight_map"].items()) {
            if (!file.is_string())
                fail(index_path, "weight_map entry " + name + " is not a file name");
            const auto f = file.get<std::string>();
            if (f.empty() || f.find('/') != std::string::npos || f.starts_with("."))
                fail(index_path, "weight_map entry " + name + " names '" + f +
                                     "', not a file in the model directory");
            weight_map[name] = f;
            shards.insert(f);
        }
        for (const auto& s : shards)
            files_.push_back(safetensors_file::open(dir + "/" + s));
    } else {
        files_.push_back(safetensors_file::open(dir + "/model.safetensors"));
    }
    for (const auto& f : files_) {
        for (const auto& [name, t] : f->tensors()) {
            if (!index_.emplace(name, &t).second)
                fail(f->path(), "tensor " + name + " is also in another shard");
            if (!weight_map.empty()) {
                const auto it = weight_map.find(name);
                const std::string file = f->path().substr(f->path().rfind('/') + 1);
                if (it == weight_map.end() || it->second != file)
                    fail(f->path(),
                         "tensor " + name + " is not where " + index_path + " says it is");
            }
        }
    }
    for (const auto& [name, file] : weight_map)
        if (!index_.contains(name))
            fail(dir + "/" + file, "tensor " + name + " listed in the index is missing");
}

const tensor_view* checkpoint_files::find(std::string_view name) const {
    const auto it = index_.find(name);
    return it == index_.end() ? nullptr : it->second;
}

const tensor_view& checkpoint_files::require(std::string_view name,
                                             std::vector<std::size_t> shape) const {
    const tensor_view* t = find(name);
    auto dims = [](const std::vector<std::size_t>& s) {
        std::string out = "[";
        for (std::size_t i = 0; i < s.size(); ++i)
            out += (i ? ", " : "") + std::to_string(s[i]);
        return out + "]";
    };
    if (t == nullptr)
        throw std::runtime_error("the checkpoint has no tensor " + std::string(name) +
                                 " (expected shape " + dims(shape) + ")");
    if (t->shape != shape)
        throw std::runtime_error("tensor " + std::string(name) + " has shape " + dims(t->shape) +
                                 "; config.json implies " + dims(shape));
    return *t;
}

std::vector<std::string> checkpoint_files::names() const {
    std::vector<std::string> out;
    for (const auto& [name, t] : index_)
        out.push_back(name);
    return out;
}

tensor_dtype checkpoint_files::main_dtype() const {
    std::map<tensor_dtype, std::size_t> bytes;
    for (const auto& [name, t] : index_)
        bytes[t->dtype] += t->bytes.size();
    tensor_dtype best = tensor_dtype::f32;
    std::size_t most = 0;
    for (const auto& [d, b] : bytes)
        if (b > most)
            best = d, most = b;
    return best;
}

void write_safetensors(const std::string& path, const std::vector<tensor_to_write>& tensors) {
    nlohmann::json header = nlohmann::json::object();
    header["__metadata__"] = {{"format", "pt"}};
    std::size_t offset = 0;
    for (const auto& t : tensors) {
        std::size_t n = 1;
        for (const auto d : t.shape)
            n *= d;
        const std::size_t bytes = n * dtype_bytes(t.dtype);
        header[t.name] = {{"dtype", to_string(t.dtype)},
                          {"shape", t.shape},
                          {"data_offsets", {offset, offset + bytes}}};
        offset += bytes;
    }
    std::string text = header.dump();
    text.append((8 - text.size() % 8) % 8, ' ');
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    if (!out)
        fail(path, "cannot create");
    std::uint64_t n = text.size();
    char len[8];
    for (char& c : len) {
        c = static_cast<char>(n & 0xff);
        n >>= 8;
    }
    out.write(len, 8);
    out.write(text.data(), static_cast<std::streamsize>(text.size()));
    std::vector<char> buf;
    for (const auto& t : tensors) {
        const std::vector<float> v = t.values();
        const std::size_t width = dtype_bytes(t.dtype);
        buf.resize(v.size() * width);
        for (std::size_t i = 0; i < v.size(); ++i) {
            if (t.dtype == tensor_dtype::f32) {
                std::memcpy(buf.data() + 4 * i, &v[i], 4);
            } else {
                const std::uint16_t h =
                    t.dtype == tensor_dtype::bf16 ? f32_to_bf16(v[i]) : f32_to_f16(v[i]);
                std::memcpy(buf.data() + 2 * i, &h, 2);
            }
        }
        out.write(buf.data(), static_cast<std::streamsize>(buf.size()));
    }
    if (!out)
        fail(path, "write failed");
}

} // namespace lanes::replica
