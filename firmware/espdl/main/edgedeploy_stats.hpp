// edgedeploy ESP-DL harness: latency statistics and the result line.
// Hand-written, copied verbatim into every generated project (edit firmware/espdl in edgedeploy).
//
// Mirrors edgedeploy/measure/protocol.py: the same percentile (linear interpolation, numpy's
// default), the same field names, so the host parses the board's line like any runner's.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdarg>
#include <cstdio>
#include <string>
#include <vector>

namespace edgedeploy {

struct LatencyStats {
    size_t count = 0;
    double min = 0, mean = 0, p50 = 0, p90 = 0, p99 = 0, max = 0, stdev = 0;
};

// Percentile q (0..100) of already sorted values, by linear interpolation.
inline double percentile(const std::vector<double> &sorted, double q)
{
    if (sorted.empty()) {
        return 0.0;
    }
    if (sorted.size() == 1) {
        return sorted[0];
    }
    double pos = (sorted.size() - 1) * (q / 100.0);
    size_t lo = static_cast<size_t>(std::floor(pos));
    size_t hi = std::min(lo + 1, sorted.size() - 1);
    return sorted[lo] + (sorted[hi] - sorted[lo]) * (pos - static_cast<double>(lo));
}

inline LatencyStats summarize(std::vector<double> samples_us)
{
    LatencyStats s;
    s.count = samples_us.size();
    if (s.count == 0) {
        return s;
    }
    std::sort(samples_us.begin(), samples_us.end());
    double sum = 0;
    for (double v : samples_us) {
        sum += v;
    }
    s.mean = sum / s.count;
    double var = 0;
    for (double v : samples_us) {
        var += (v - s.mean) * (v - s.mean);
    }
    s.stdev = s.count > 1 ? std::sqrt(var / (s.count - 1)) : 0.0;
    s.min = samples_us.front();
    s.max = samples_us.back();
    s.p50 = percentile(samples_us, 50);
    s.p90 = percentile(samples_us, 90);
    s.p99 = percentile(samples_us, 99);
    return s;
}

// A JSON object built up as text; keys are fixed by the harness, string values are escaped.
class JsonWriter {
public:
    void raw(const char *key, const std::string &json_value) { field(key); out_ += json_value; }
    void str(const char *key, const std::string &value) { field(key); out_ += quote(value); }
    void num(const char *key, double value)
    {
        field(key);
        if (!std::isfinite(value)) {
            out_ += "null";  // JSON has no inf or NaN
            return;
        }
        char buf[40];
        snprintf(buf, sizeof(buf), "%.3f", value);
        out_ += buf;
    }
    void integer(const char *key, long long value)
    {
        field(key);
        char buf[32];
        snprintf(buf, sizeof(buf), "%lld", value);
        out_ += buf;
    }
    void boolean(const char *key, bool value) { field(key); out_ += value ? "true" : "false"; }
    std::string close() const { return "{" + out_ + "}"; }

    static std::string quote(const std::string &value)
    {
        std::string q = "\"";
        for (unsigned char c : value) {
            if (c == '"' || c == '\\') {
                q += '\\';
                q += static_cast<char>(c);
            } else if (c < 0x20 || c >= 0x7f) {
                char buf[8];
                snprintf(buf, sizeof(buf), "\\u%04x", c);
                q += buf;
            } else {
                q += static_cast<char>(c);
            }
        }
        return q + "\"";
    }

private:
    void field(const char *key)
    {
        if (!out_.empty()) {
            out_ += ",";
        }
        out_ += quote(key);
        out_ += ":";
    }
    std::string out_;
};

inline std::string latency_json(const LatencyStats &s)
{
    JsonWriter w;
    w.integer("count", static_cast<long long>(s.count));
    w.num("min", s.min);
    w.num("mean", s.mean);
    w.num("p50", s.p50);
    w.num("p90", s.p90);
    w.num("p99", s.p99);
    w.num("max", s.max);
    w.num("stdev", s.stdev);
    return w.close();
}

}  // namespace edgedeploy
