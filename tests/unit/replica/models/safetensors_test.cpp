// The safetensors reader: the header checks, each refusal naming the tensor, and the 16-bit
// conversions against values worked out by hand.
#include "replica/models/safetensors.hpp"

#include <catch2/catch.hpp>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

#include <unistd.h>

using namespace lanes::replica;

namespace {

// A file image: the header's length, the header, then `data_bytes` zero bytes.
std::vector<std::byte> image(const std::string& header, std::size_t data_bytes) {
    std::vector<std::byte> out(8 + header.size() + data_bytes);
    std::uint64_t n = header.size();
    for (std::size_t i = 0; i < 8; ++i, n >>= 8)
        out[i] = static_cast<std::byte>(n & 0xff);
    std::memcpy(out.data() + 8, header.data(), header.size());
    return out;
}

std::string refusal(const std::vector<std::byte>& file) {
    try {
        safetensors_file::parse(file, "test.safetensors");
    } catch (const std::runtime_error& e) {
        return e.what();
    }
    return "";
}

} // namespace

TEST_CASE("safetensors: a well-formed header gives views of the data", "[safetensors]") {
    const auto file = image(R"({"__metadata__":{"format":"pt"},)"
                            R"("a":{"dtype":"F32","shape":[2,2],"data_offsets":[0,16]},)"
                            R"("b":{"dtype":"BF16","shape":[3],"data_offsets":[16,22]}})",
                            22);
    const auto f = safetensors_file::parse(file, "test.safetensors");
    REQUIRE(f->tensors().size() == 2);
    const tensor_view& a = f->tensors().at("a");
    CHECK(a.dtype == tensor_dtype::f32);
    CHECK(a.shape == std::vector<std::size_t>{2, 2});
    CHECK(a.numel() == 4);
    CHECK(a.bytes.size() == 16);
    CHECK(f->tensors().at("b").to_f32() == std::vector<float>{0, 0, 0});
    CHECK(f->metadata().at("format") == "pt");
}

TEST_CASE("safetensors: malformed headers are refused naming the tensor", "[safetensors]") {
    CHECK_THAT(refusal(std::vector<std::byte>(4)), Catch::Contains("shorter than"));
    auto past_end = image("{}", 0);
    past_end[0] = std::byte{200};
    CHECK_THAT(refusal(past_end), Catch::Contains("runs past the end"));
    CHECK_THAT(refusal(image("{not json", 0)), Catch::Contains("not valid JSON"));
    CHECK_THAT(refusal(image(R"({"w":{"dtype":"F32","shape":[2],"data_offsets":[0,4]}})", 8)),
               Catch::Contains("tensor w: data_offsets hold 4 bytes") && Catch::Contains("need 8"));
    CHECK_THAT(refusal(image(R"({"w":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})", 4)),
               Catch::Contains("tensor w: data_offsets [0, 8) lie outside"));
    CHECK_THAT(refusal(image(R"({"w":{"dtype":"Q4","shape":[2],"data_offsets":[0,8]}})", 8)),
               Catch::Contains("tensor w has unknown dtype"));
    CHECK_THAT(refusal(image(R"({"x":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
                             R"("y":{"dtype":"F32","shape":[2],"data_offsets":[4,12]}})",
                             12)),
               Catch::Contains("tensor y overlaps tensor x"));
    CHECK_THAT(refusal(image(R"({"x":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},)"
                             R"("x":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})",
                             8)),
               Catch::Contains("tensor x appears twice"));
    CHECK_THAT(refusal(image(R"({"w":{"dtype":"F32","shape":[-1],"data_offsets":[0,0]}})", 0)),
               Catch::Contains("tensor w shape must be a non-negative integer"));
    CHECK_THAT(refusal(image(R"({"w":{"dtype":"F64","shape":[4294967296,4294967296,16],)"
                             R"("data_offsets":[0,0]}})",
                             0)),
               Catch::Contains("tensor w: shape overflows"));
}

TEST_CASE("safetensors: a dtype lanes cannot compute with is refused when read", "[safetensors]") {
    const auto file = image(R"({"q":{"dtype":"I8","shape":[4],"data_offsets":[0,4]}})", 4);
    const auto f = safetensors_file::parse(file, "test.safetensors");
    CHECK_THROWS_WITH(f->tensors().at("q").to_f32(),
                      Catch::Contains("tensor q is I8") && Catch::Contains("F32, F16 and BF16"));
}

TEST_CASE("safetensors: half and bfloat16 conversions", "[safetensors]") {
    CHECK(f16_to_f32(0x3c00) == 1.0f);
    CHECK(f16_to_f32(0xc000) == -2.0f);
    CHECK(f16_to_f32(0x7bff) == 65504.0f);
    CHECK(f16_to_f32(0x0001) == std::ldexp(1.0f, -24)); // the smallest subnormal
    CHECK(std::isinf(f16_to_f32(0x7c00)));
    CHECK(std::isnan(f16_to_f32(0x7e00)));
    // Every finite half survives f16 -> f32 -> f16.
    int mismatches = 0;
    for (std::uint32_t h = 0; h < 0x10000; ++h) {
        const auto v = static_cast<std::uint16_t>(h);
        if ((v & 0x7c00) == 0x7c00)
            continue;
        mismatches += f32_to_f16(f16_to_f32(v)) != v;
    }
    CHECK(mismatches == 0);
    CHECK(f32_to_f16(1.0f + std::ldexp(1.0f, -11)) == 0x3c00); // a tie rounds to even
    CHECK(f32_to_f16(1e6f) == 0x7c00);                         // past the range: infinity
    CHECK(bf16_to_f32(0x3f80) == 1.0f);
    CHECK(f32_to_bf16(1.0f) == 0x3f80);
    CHECK(f32_to_bf16(1.0f + std::ldexp(1.0f, -8)) == 0x3f80); // tie: to even
    CHECK(f32_to_bf16(1.0f + 3 * std::ldexp(1.0f, -8)) == 0x3f82);
}

TEST_CASE("safetensors: what write_safetensors writes reads back", "[safetensors]") {
    const std::string path = "/tmp/lanes_safetensors_test_" + std::to_string(::getpid());
    write_safetensors(
        path,
        {{"w", tensor_dtype::f32, {2, 3}, [] { return std::vector<float>{1, 2, 3, 4, 5, 6}; }},
         {"h", tensor_dtype::bf16, {2}, [] {
              return std::vector<float>{0.5f, -3.0f};
          }}});
    const auto f = safetensors_file::open(path);
    CHECK(f->tensors().at("w").to_f32() == std::vector<float>{1, 2, 3, 4, 5, 6});
    CHECK(f->tensors().at("h").to_f32() == std::vector<float>{0.5f, -3.0f});
    std::remove(path.c_str());
}
