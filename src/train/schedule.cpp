#include "src/train/schedule.hpp"

#include <algorithm>
#include <limits>
#include <map>
#include <tuple>

#include "src/core/error.hpp"
#include "src/plan/rebalance.hpp"

namespace gt {

Schedule parse_schedule(const std::string& name) {
  if (name == "gpipe") return Schedule::GPipe;
  if (name == "1f1b") return Schedule::OneFOneB;
  if (name == "interleaved") return Schedule::Interleaved;
  throw Error("unknown pipeline schedule '" + name + "' (expected \"1f1b\", \"gpipe\" or \"interleaved\")");
}

namespace {

std::vector<PipeOp> interleaved(int p, int stage, int m, int v) {
  if (v < 1 || m % p != 0)
    throw Error("pipeline: the interleaved schedule needs the micro-batches (" + std::to_string(m) +
                ") a multiple of the stages (" + std::to_string(p) + ") and at least one chunk per stage");
  const int total = m * v, group = p * v;
  auto forward = [&](int k) { return PipeOp{PipeOp::Forward, (k / group) * p + k % p, (k % group) / p}; };
  auto backward = [&](int k) { return PipeOp{PipeOp::Backward, (k / group) * p + k % p, v - 1 - (k % group) / p}; };
  const int warmup = std::min(total, 2 * (p - stage - 1) + (v - 1) * p);
  std::vector<PipeOp> ops;
  int f = 0, b = 0;
  for (; f < warmup; ++f) ops.push_back(forward(f));
  while (f < total) {
    ops.push_back(forward(f++));
    ops.push_back(backward(b++));
  }
  while (b < total) ops.push_back(backward(b++));
  return ops;
}

}  // namespace

std::vector<PipeOp> pipeline_schedule(Schedule s, int stages, int stage, int m, int chunks) {
  if (s == Schedule::Interleaved && chunks > 1) return interleaved(stages, stage, m, chunks);
  std::vector<PipeOp> ops;
  if (s == Schedule::GPipe) {
    for (int i = 0; i < m; ++i) ops.push_back({PipeOp::Forward, i});
    for (int i = 0; i < m; ++i) ops.push_back({PipeOp::Backward, i});
    return ops;
  }
  const int warmup = std::min(stages - stage - 1, m);
  int f = 0, b = 0;
  for (; f < warmup; ++f) ops.push_back({PipeOp::Forward, f});
  while (f < m) {
    ops.push_back({PipeOp::Forward, f++});
    ops.push_back({PipeOp::Backward, b++});
  }
  while (b < m) ops.push_back({PipeOp::Backward, b++});
  return ops;
}

std::vector<P2PGroup> pipeline_p2p(const std::vector<PipeOp>& ops, int stages, int stage) {
  std::vector<P2PGroup> groups(ops.size() + 1);
  const bool first = stage == 0, last = stage == stages - 1;
  for (size_t i = 0; i < ops.size(); ++i) {
    const int m = ops[i].micro_batch;
    const bool fwd = ops[i].kind == PipeOp::Forward;
    if (fwd ? !first : !last)  // op i's input comes from a neighbour
      groups[i].push_back({false, fwd ? stage - 1 : stage + 1, fwd ? 2 * m : 2 * m + 1});
    if (fwd ? !last : !first)  // its result goes to the other neighbour, with op i + 1's receive
      groups[i + 1].push_back({true, fwd ? stage + 1 : stage - 1, fwd ? 2 * m : 2 * m + 1});
  }
  return groups;
}

std::string p2p_deadlock(const std::vector<std::vector<P2PGroup>>& st) {
  const int n = int(st.size());
  // Where each message's partner sits: key (from, to, ordinal) -> (group, index) on the receiving or sending side.
  using Key = std::tuple<int, int, int>;
  std::map<Key, std::pair<int, int>> sends, recvs;
  std::vector<std::vector<std::vector<Key>>> key(static_cast<size_t>(n));  // key of each message
  for (int s = 0; s < n; ++s) {
    std::map<std::pair<int, int>, int> ord;  // (peer, send?) -> count so far
    key[size_t(s)].resize(st[size_t(s)].size());
    for (int g = 0; g < int(st[size_t(s)].size()); ++g)
      for (int j = 0; j < int(st[size_t(s)][size_t(g)].size()); ++j) {
        const P2PMsg& msg = st[size_t(s)][size_t(g)][size_t(j)];
        const int k = ord[{msg.peer, msg.send}]++;
        const Key kk = msg.send ? Key{s, msg.peer, k} : Key{msg.peer, s, k};
        (msg.send ? sends : recvs)[kk] = {g, j};
        key[size_t(s)][size_t(g)].push_back(kk);
      }
  }
  std::vector<int> at(size_t(n), 0);                          // executing group of each stage
  std::vector<std::vector<char>> done(static_cast<size_t>(n));            // messages of that group done
  auto group = [&](int s) -> const P2PGroup& { return st[size_t(s)][size_t(at[size_t(s)])]; };
  for (int s = 0; s < n; ++s)
    if (!st[size_t(s)].empty()) done[size_t(s)].assign(group(s).size(), 0);
  for (bool progress = true; progress;) {
    progress = false;
    for (int s = 0; s < n; ++s) {
      if (at[size_t(s)] >= int(st[size_t(s)].size())) continue;
      const P2PGroup& g = group(s);
      for (size_t j = 0; j < g.size(); ++j) {
        if (done[size_t(s)][j]) continue;
        const Key kk = key[size_t(s)][size_t(at[size_t(s)])][j];
        const auto& other = g[j].send ? recvs : sends;
        const auto it = other.find(kk);
        const int peer = g[j].peer;
        if (it == other.end())
          return "stage " + std::to_string(s) + ": message with tag " + std::to_string(g[j].tag) + " to/from stage " +
                 std::to_string(peer) + " has no partner";
        if (peer < 0 || peer >= n || at[size_t(peer)] != it->second.first) continue;  // partner not executing yet
        const P2PMsg& pm = st[size_t(peer)][size_t(it->second.first)][size_t(it->second.second)];
        if (pm.tag != g[j].tag)
          return "stage " + std::to_string(s) + " tag " + std::to_string(g[j].tag) + " meets tag " +
                 std::to_string(pm.tag) + " on stage " + std::to_string(peer);
        done[size_t(s)][j] = 1;
        done[size_t(peer)][size_t(it->second.second)] = 1;
        progress = true;
      }
      if (std::all_of(done[size_t(s)].begin(), done[size_t(s)].end(), [](char c) { return c != 0; })) {
        if (++at[size_t(s)] < int(st[size_t(s)].size())) done[size_t(s)].assign(group(s).size(), 0);
        progress = true;
      }
    }
  }
  std::string stuck;
  for (int s = 0; s < n; ++s)
    if (at[size_t(s)] < int(st[size_t(s)].size()))
      stuck += (stuck.empty() ? "" : "; ") + std::string("stage ") + std::to_string(s) + " stuck in its group " +
               std::to_string(at[size_t(s)]);
  return stuck;
}

int max_in_flight(const std::vector<PipeOp>& ops) {
  int live = 0, peak = 0;
  for (const PipeOp& op : ops) {
    live += op.kind == PipeOp::Forward ? 1 : -1;
    peak = std::max(peak, live);
  }
  return peak;
}

double bubble_fraction(int p, int m) { return double(p - 1) / double(m + p - 1); }

std::vector<int> partition_stages(int blocks, int stages, double block_cost, double first_extra, double last_extra) {
  if (stages <= 0) throw Error("pipeline: parallel.pp must be positive");
  if (blocks < stages)
    throw Error("pipeline: model.n_layer (" + std::to_string(blocks) + ") is smaller than parallel.pp (" +
                std::to_string(stages) + "): every stage needs at least one block");
  // The planner's linear-partition DP over per-block costs (it also rebalances from measured times).
  return plan::partition_by_cost(std::vector<double>(blocks, block_cost), stages, first_extra, last_extra);
}

}  // namespace gt
