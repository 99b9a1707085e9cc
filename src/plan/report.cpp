#include "src/plan/report.hpp"

#include <cstdio>
#include <map>
#include <sstream>

#include "src/plan/framework.hpp"

namespace gt::plan {

namespace {

std::string fmt(const char* f, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, f, v);
  return buf;
}

std::string jstr(const std::string& s) {
  std::string o = "\"";
  for (char ch : s) {
    if (ch == '"' || ch == '\\') o += '\\';
    if (static_cast<unsigned char>(ch) < 0x20) continue;
    o += ch;
  }
  return o + "\"";
}

std::string layout_json(const Layout& l) {
  std::ostringstream o;
  o << "{\"tp\": " << l.tp << ", \"cp\": " << l.cp << ", \"pp\": " << l.pp << ", \"virtual_stages\": " << l.vp
    << ", \"dp\": " << l.dp << ", \"micro_batch\": " << l.micro_batch
    << ", \"micro_batches\": " << l.micro_batches << ", \"zero\": " << l.zero << ", \"precision\": "
    << jstr(name(l.precision)) << ", \"recompute\": " << jstr(name(l.recompute))
    << ", \"sequence_parallel\": " << (l.sequence_parallel ? "true" : "false")
    << ", \"schedule\": " << jstr(l.gpipe ? "gpipe" : l.vp > 1 ? "interleaved" : "1f1b") << "}";
  return o.str();
}

std::string candidate_json(const Candidate& c) {
  std::ostringstream o;
  o.precision(6);
  const MemoryBreakdown& m = c.memory;
  const TimeBreakdown& t = c.time;
  o << "{\"layout\": " << layout_json(c.layout);
  if (!c.reason.empty()) o << ", \"reason\": " << jstr(c.reason);
  if (m.total() > 0)
    o << ", \"memory_gb\": {\"stage\": " << m.stage << ", \"params\": " << m.params / 1e9 << ", \"grads\": "
      << m.grads / 1e9 << ", \"optimizer\": " << m.optimizer / 1e9 << ", \"activations\": " << m.activations / 1e9
      << ", \"workspace\": " << m.workspace / 1e9 << ", \"comm_buffers\": " << m.comm_buffers / 1e9
      << ", \"total\": " << m.total() / 1e9 << "}";
  if (t.step > 0)
    o << ", \"time_ms\": {\"step\": " << t.step * 1e3 << ", \"compute\": " << t.compute * 1e3 << ", \"tp\": "
      << t.tp * 1e3 << ", \"cp\": " << t.cp * 1e3 << ", \"pp\": " << t.pp * 1e3 << ", \"dp\": " << t.dp * 1e3 << ", \"dp_total\": "
      << t.dp_total * 1e3 << ", \"bubble\": " << t.bubble * 1e3 << ", \"optimizer\": " << t.optimizer * 1e3
      << ", \"overhead\": " << t.overhead * 1e3 << "}, \"tokens_per_s\": " << t.tokens_per_s << ", \"mfu\": " << t.mfu
      << ", \"exposed_comm_share\": " << t.comm_share();
  return o.str() + "}";
}

}  // namespace

std::string plan_table(const Plan& p, const ModelShape& m, const Cluster& c, const PlanOptions& o, int top) {
  std::ostringstream out;
  out << "gridtrain plan: " << fmt("%.3g", m.total_params() / 1e9) << " B parameters (L=" << m.L << " h=" << m.h
      << " heads=" << m.a << " s=" << m.s << " V=" << m.V << ") on " << o.devices << " x " << c.name
      << " | global batch " << o.global_batch << " | framework " << name(o.framework) << "\n";
  out << p.fits.size() << " layouts fit, " << p.rejected.size() << " rejected; usable memory per device "
      << fmt("%.1f", c.usable_memory_bytes() / 1e9) << " GB\n\n";
  out << "rank  layout                                        | memory GB: params grads optim  activ  work+buf  total"
         " | step ms: compute  tp+cp   pp     dp   bubble  optim  other    total | tokens/s   MFU  comm\n";
  int k = 0;
  for (const Candidate& cand : p.fits) {
    if (k >= top) break;
    const MemoryBreakdown& mm = cand.memory;
    const TimeBreakdown& t = cand.time;
    char line[512];
    std::snprintf(line, sizeof line,
                  "%4d  %-45s | %16.2f %5.2f %5.2f %6.2f %9.2f %6.2f | %16.1f %6.1f %6.1f %6.1f %7.1f %6.1f %6.1f "
                  "%8.1f | %9.0f %4.1f%% %4.1f%%\n",
                  ++k, cand.layout.str().c_str(), mm.params / 1e9, mm.grads / 1e9, mm.optimizer / 1e9,
                  mm.activations / 1e9, (mm.workspace + mm.comm_buffers) / 1e9, mm.total() / 1e9, t.compute * 1e3,
                  (t.tp + t.cp) * 1e3, t.pp * 1e3, t.dp * 1e3, t.bubble * 1e3, t.optimizer * 1e3, t.overhead * 1e3,
                  t.step * 1e3, t.tokens_per_s, 100 * t.mfu, 100 * t.comm_share());
    out << line;
  }
  if (static_cast<int>(p.fits.size()) > top) out << "      ... " << p.fits.size() - top << " more (--top N)\n";
  // Rejections grouped by the kind of reason (its text up to the first number), one example each.
  std::map<std::string, std::pair<int, const Candidate*>> kinds;
  for (const Candidate& r : p.rejected) {
    std::string kind = r.reason.substr(0, r.reason.find_first_of("0123456789"));
    if (r.reason.rfind("needs", 0) == 0) kind = "does not fit in memory";
    auto& e = kinds[kind];
    if (e.first++ == 0) e.second = &r;
  }
  if (!kinds.empty()) out << "\nrejected:\n";
  for (const auto& [kind, e] : kinds)
    out << "  " << e.first << " x " << kind << "  e.g. " << e.second->layout.str() << ": " << e.second->reason << "\n";
  return out.str();
}

std::string plan_json(const Plan& p, const ModelShape& m, const Cluster& c, const PlanOptions& o,
                      const std::vector<ScalingPoint>& scaling) {
  std::ostringstream out;
  out.precision(6);
  out << "{\"model\": {\"n_layer\": " << m.L << ", \"d_model\": " << m.h << ", \"n_head\": " << m.a
      << ", \"seq_len\": " << m.s << ", \"vocab_size\": " << m.V << ", \"arch\": " << jstr(enum_name(m.arch))
      << ", \"n_kv_head\": " << m.kv_heads() << ", \"ffn_hidden\": " << m.ffn_width() << ", \"tied\": "
      << (m.tied() ? "true" : "false") << ", \"attention\": " << jstr(name(attention_of(m, o.framework)))
      << ", \"params\": " << m.total_params() << "},\n"
      << " \"cluster\": " << jstr(c.name) << ", \"devices\": " << o.devices << ", \"global_batch\": " << o.global_batch
      << ", \"framework\": " << jstr(name(o.framework)) << ", \"usable_memory_gb\": " << c.usable_memory_bytes() / 1e9
      << ",\n \"fits\": [";
  for (size_t i = 0; i < p.fits.size(); ++i) out << (i ? ",\n  " : "\n  ") << candidate_json(p.fits[i]);
  out << "],\n \"rejected\": [";
  for (size_t i = 0; i < p.rejected.size(); ++i) out << (i ? ",\n  " : "\n  ") << candidate_json(p.rejected[i]);
  out << "],\n \"scaling\": [";
  for (size_t i = 0; i < scaling.size(); ++i)
    out << (i ? ",\n  " : "\n  ") << "{\"devices\": " << scaling[i].devices << ", \"best\": " << candidate_json(scaling[i].best)
        << "}";
  out << "]}\n";
  return out.str();
}

}  // namespace gt::plan
