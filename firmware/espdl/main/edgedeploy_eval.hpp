// edgedeploy ESP-DL harness: the evaluation protocol, the user's samples in and the model's outputs out over the console.
// Hand-written, copied verbatim into every generated project (edit firmware/espdl in edgedeploy).
// Platform-independent C++17 (no ESP-IDF here): app_main.cpp feeds it console lines and gives it
// the model; the host side is edgedeploy/devices/serial_eval.py.
//
// The console is shared with logs, and ESP-IDF's console may rewrite line endings, so every
// frame is one ASCII line, with base64 payloads and a CRC-32 (IEEE, as zlib.crc32) of the bytes:
//
//   host -> board   "@ED1 BEGIN <count> <start>"                 a stream of <count> samples, resumed at <start>
//                   "@ED1 S <seq> <part> <parts> <crc32> <b64>"  part <part> of <parts> of sample <seq>
//                   "@ED1 END"
//   board -> host   "EDGEDEPLOY-EVAL {json}" with event:
//                   ready   after every boot: protocol, boot_id, max_part_bytes, inputs/outputs (name, shape, dtype)
//                   begin   the stream (re)started: next, count
//                   ack     a part arrived intact (seq, part)
//                   output  the outputs of sample <seq>, one line per part (part, parts, crc32, data)
//                   nak     a part was refused (reason, and the seq/part expected next)
//                   end     the stream ended (samples)
//
// A sample's payload is the model's inputs in the order `ready` lists them, float32 little
// endian, in the board's layout; the board quantizes each input with its tensor's exponent (as
// esp-dl does: dl::quantize), runs the model, and sends every output dequantized to float32.
// Resumable: a part sent again after a lost reply is acknowledged again, a sample whose output
// was lost is answered from the cached output, and after a reset the host sends BEGIN with the
// first sample it has no output for.

#pragma once

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "edgedeploy_stats.hpp"

namespace edgedeploy {
namespace eval {

constexpr int PROTOCOL_VERSION = 1;
constexpr const char *FRAME_PREFIX = "@ED1 ";
constexpr const char *REPLY_PREFIX = "EDGEDEPLOY-EVAL ";
// Bytes of payload per part, each way: a line of about 2.8 kB fits every console buffer.
constexpr size_t MAX_PART_BYTES = 2048;
// The longest line the board reads (a part's base64 and its header).
constexpr size_t MAX_LINE_BYTES = 4 * ((MAX_PART_BYTES + 2) / 3) + 96;
// A sample is at most this big (inputs), so a lying header cannot make the board allocate more.
constexpr size_t MAX_SAMPLE_BYTES = 8u * 1024u * 1024u;

inline uint32_t crc32(const uint8_t *data, size_t size, uint32_t crc = 0)
{
    crc = ~crc;
    for (size_t i = 0; i < size; ++i) {
        crc ^= data[i];
        for (int bit = 0; bit < 8; ++bit) {
            crc = (crc >> 1) ^ (0xEDB88320u & (0u - (crc & 1u)));
        }
    }
    return ~crc;
}

inline std::string base64_encode(const uint8_t *data, size_t size)
{
    static const char table[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    std::string out;
    out.reserve(4 * ((size + 2) / 3));
    for (size_t i = 0; i < size; i += 3) {
        uint32_t n = static_cast<uint32_t>(data[i]) << 16;
        if (i + 1 < size) n |= static_cast<uint32_t>(data[i + 1]) << 8;
        if (i + 2 < size) n |= data[i + 2];
        out += table[(n >> 18) & 63];
        out += table[(n >> 12) & 63];
        out += i + 1 < size ? table[(n >> 6) & 63] : '=';
        out += i + 2 < size ? table[n & 63] : '=';
    }
    return out;
}

// False for anything that is not canonical base64 (wrong characters, length, padding).
inline bool base64_decode(const char *text, size_t length, std::vector<uint8_t> &out)
{
    out.clear();
    if (length % 4 != 0) {
        return false;
    }
    auto value = [](char c) -> int {
        if (c >= 'A' && c <= 'Z') return c - 'A';
        if (c >= 'a' && c <= 'z') return c - 'a' + 26;
        if (c >= '0' && c <= '9') return c - '0' + 52;
        if (c == '+') return 62;
        if (c == '/') return 63;
        return -1;
    };
    out.reserve(length / 4 * 3);
    for (size_t i = 0; i < length; i += 4) {
        int a = value(text[i]), b = value(text[i + 1]);
        bool last = i + 4 == length;
        int c = (last && text[i + 2] == '=') ? -2 : value(text[i + 2]);
        int d = (last && text[i + 3] == '=') ? -2 : value(text[i + 3]);
        if (a < 0 || b < 0 || c == -1 || d == -1 || (c == -2 && d != -2)) {
            return false;
        }
        uint32_t n = (a << 18) | (b << 12) | ((c < 0 ? 0 : c) << 6) | (d < 0 ? 0 : d);
        out.push_back(static_cast<uint8_t>(n >> 16));
        if (c >= 0) out.push_back(static_cast<uint8_t>((n >> 8) & 0xFF));
        if (d >= 0) out.push_back(static_cast<uint8_t>(n & 0xFF));
    }
    return true;
}

// What app_main.cpp provides: the model's inputs and outputs, and one inference.
class Model {
public:
    virtual ~Model() = default;
    virtual size_t input_bytes() = 0;   // float32 bytes of all inputs together
    virtual size_t output_bytes() = 0;  // float32 bytes of all outputs together
    // Quantize `input` (float32, the inputs one after the other) into the model, run it, and
    // write the outputs (float32, one after the other) into `output`; false with `error` set if not.
    virtual bool infer(const std::vector<uint8_t> &input, std::vector<uint8_t> &output, std::string &error, double &inference_us) = 0;
    virtual std::string describe_io() = 0;  // JSON members "inputs":[...],"outputs":[...]
};

// The board's side of a stream: one console line in, the reply lines out.
class Session {
public:
    explicit Session(Model &model) : model_(model) {}

    // Reply lines (each to be printed after REPLY_PREFIX) for one line the host sent; empty for
    // a line that is not a frame (the console's own noise).
    std::vector<std::string> handle(const char *line)
    {
        std::vector<std::string> replies;
        std::string text(line);
        while (!text.empty() && (text.back() == '\n' || text.back() == '\r')) {
            text.pop_back();
        }
        size_t at = text.find(FRAME_PREFIX);
        if (at == std::string::npos) {
            return replies;
        }
        text = text.substr(at + strlen(FRAME_PREFIX));
        if (text.rfind("BEGIN ", 0) == 0) {
            long count = 0, start = 0;
            if (sscanf(text.c_str() + 6, "%ld %ld", &count, &start) != 2 || count < 0 || start < 0 || start > count) {
                replies.push_back(nak("format", "BEGIN needs <count> <start>"));
                return replies;
            }
            count_ = count;
            next_seq_ = start;
            next_part_ = 0;
            buffer_.clear();
            streaming_ = true;
            JsonWriter w;
            w.str("event", "begin");
            w.integer("next", next_seq_);
            w.integer("count", count_);
            replies.push_back(w.close());
            return replies;
        }
        if (text == "END") {
            streaming_ = false;
            JsonWriter w;
            w.str("event", "end");
            w.integer("samples", done_);
            replies.push_back(w.close());
            return replies;
        }
        if (text.rfind("S ", 0) != 0) {
            replies.push_back(nak("format", "unknown frame"));
            return replies;
        }
        long seq = -1, part = -1, parts = -1;
        unsigned long crc = 0;
        int consumed = 0;
        if (sscanf(text.c_str() + 2, "%ld %ld %ld %8lx %n", &seq, &part, &parts, &crc, &consumed) != 4 || consumed <= 0 || seq < 0 || part < 0 ||
            parts < 1 || part >= parts) {
            replies.push_back(nak("format", "S needs <seq> <part> <parts> <crc32> <base64>"));
            return replies;
        }
        if (!streaming_) {
            replies.push_back(nak("sequence", "no stream: send BEGIN first"));
            return replies;
        }
        // The same part again (the host lost our reply): answer it again, change nothing.
        if (seq == last_seq_ && part == last_part_ && part + 1 < parts) {
            replies.push_back(ack(seq, part));
            return replies;
        }
        if (seq == last_done_seq_ && part + 1 == parts) {
            replies = last_output_;
            return replies;
        }
        if (seq != next_seq_ || part != next_part_) {
            replies.push_back(nak("sequence", "out of order", seq, part));
            return replies;
        }
        const char *b64 = text.c_str() + 2 + consumed;
        std::vector<uint8_t> bytes;
        if (!base64_decode(b64, strlen(b64), bytes)) {
            replies.push_back(nak("base64", "the payload is not base64", seq, part));
            return replies;
        }
        if (bytes.size() > MAX_PART_BYTES) {
            replies.push_back(nak("length", "the part is longer than max_part_bytes", seq, part));
            return replies;
        }
        if (crc32(bytes.data(), bytes.size()) != static_cast<uint32_t>(crc)) {
            replies.push_back(nak("checksum", "the part's CRC-32 does not match", seq, part));
            return replies;
        }
        if (buffer_.size() + bytes.size() > MAX_SAMPLE_BYTES || buffer_.size() + bytes.size() > model_.input_bytes()) {
            buffer_.clear();
            next_part_ = 0;
            replies.push_back(nak("length", "the sample is longer than the model's inputs", seq, 0));
            return replies;
        }
        buffer_.insert(buffer_.end(), bytes.begin(), bytes.end());
        last_seq_ = seq;
        last_part_ = part;
        if (part + 1 < parts) {
            next_part_ = part + 1;
            replies.push_back(ack(seq, part));
            return replies;
        }
        // The last part: the whole sample is here.
        std::vector<uint8_t> input;
        input.swap(buffer_);
        next_part_ = 0;
        if (input.size() != model_.input_bytes()) {
            replies.push_back(nak("length", "the sample's size is not the model's inputs'", seq, 0));
            last_seq_ = -1;
            return replies;
        }
        std::vector<uint8_t> output;
        std::string error;
        double inference_us = 0;
        if (!model_.infer(input, output, error, inference_us)) {
            replies.push_back(nak("inference", error.c_str(), seq, 0));
            last_seq_ = -1;
            return replies;
        }
        replies = output_lines(seq, output, inference_us);
        last_output_ = replies;
        last_done_seq_ = seq;
        next_seq_ = seq + 1;
        ++done_;
        return replies;
    }

    std::string ready(const std::string &boot_id, const std::string &model_sha256)
    {
        JsonWriter w;
        w.str("event", "ready");
        w.integer("protocol", PROTOCOL_VERSION);
        w.str("boot_id", boot_id);
        w.str("model_sha256", model_sha256);
        w.integer("max_part_bytes", static_cast<long long>(MAX_PART_BYTES));
        w.integer("input_bytes", static_cast<long long>(model_.input_bytes()));
        w.integer("output_bytes", static_cast<long long>(model_.output_bytes()));
        std::string head = w.close();
        return head.substr(0, head.size() - 1) + "," + model_.describe_io() + "}";
    }

private:
    std::string ack(long seq, long part)
    {
        JsonWriter w;
        w.str("event", "ack");
        w.integer("seq", seq);
        w.integer("part", part);
        return w.close();
    }

    std::string nak(const char *reason, const char *detail, long seq = -1, long part = -1)
    {
        JsonWriter w;
        w.str("event", "nak");
        w.str("reason", reason);
        w.str("detail", detail);
        w.integer("seq", seq);
        w.integer("part", part);
        w.integer("expected_seq", next_seq_);
        w.integer("expected_part", next_part_);
        return w.close();
    }

    std::vector<std::string> output_lines(long seq, const std::vector<uint8_t> &output, double inference_us)
    {
        std::vector<std::string> lines;
        size_t parts = output.empty() ? 1 : (output.size() + MAX_PART_BYTES - 1) / MAX_PART_BYTES;
        for (size_t p = 0; p < parts; ++p) {
            size_t begin = p * MAX_PART_BYTES;
            size_t size = output.size() > begin ? std::min(MAX_PART_BYTES, output.size() - begin) : 0;
            const uint8_t *data = output.data() + begin;
            char crc_hex[12];
            snprintf(crc_hex, sizeof(crc_hex), "%08lx", static_cast<unsigned long>(crc32(data, size)));
            JsonWriter w;
            w.str("event", "output");
            w.integer("seq", seq);
            w.integer("part", static_cast<long long>(p));
            w.integer("parts", static_cast<long long>(parts));
            w.integer("bytes", static_cast<long long>(size));
            w.str("crc32", crc_hex);
            w.num("inference_us", inference_us);
            w.str("data", base64_encode(data, size));
            lines.push_back(w.close());
        }
        return lines;
    }

    Model &model_;
    bool streaming_ = false;
    long count_ = 0;
    long next_seq_ = 0;
    long next_part_ = 0;
    long last_seq_ = -1;
    long last_part_ = -1;
    long last_done_seq_ = -1;
    long done_ = 0;
    std::vector<uint8_t> buffer_;
    std::vector<std::string> last_output_;
};

}  // namespace eval
}  // namespace edgedeploy
