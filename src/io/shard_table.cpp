#include "src/io/shard_table.hpp"

#include <algorithm>
#include <cstring>
#include <map>

#include "src/io/agree.hpp"
#include "src/io/h5_util.hpp"

namespace gt::io {

namespace {

// Flat int64 encoding of one rank's shards:
// [name_len, name bytes (8 per word), ndim, shape, start, count, writer, flat_begin, flat_end]
void encode(const TensorShard& t, std::vector<int64_t>& out) {
  out.push_back(static_cast<int64_t>(t.name.size()));
  for (size_t i = 0; i < t.name.size(); i += 8) {
    int64_t w = 0;
    std::memcpy(&w, t.name.data() + i, std::min<size_t>(8, t.name.size() - i));
    out.push_back(w);
  }
  out.push_back(static_cast<int64_t>(t.global_shape.size()));
  for (auto* v : {&t.global_shape, &t.start, &t.count}) out.insert(out.end(), v->begin(), v->end());
  out.push_back(t.writer ? 1 : 0);
  out.push_back(t.flat_begin);
  out.push_back(t.flat_end);
}

void check_shard(const TensorShard& t) {
  const std::string what = "tensor '" + t.name + "': ";
  if (t.name.empty() || t.name.front() == '/' || t.name.back() == '/' || t.name.find("//") != std::string::npos)
    throw Error("tensor name '" + t.name + "' is not a valid dataset path");
  const size_t nd = t.global_shape.size();
  if (nd == 0) throw Error(what + "empty global shape (store scalars as shape (1))");
  if (t.start.size() != nd || t.count.size() != nd)
    throw Error(what + "start/count have " + std::to_string(t.start.size()) + "/" + std::to_string(t.count.size()) +
                " dimensions, global shape has " + std::to_string(nd));
  for (size_t d = 0; d < nd; ++d)
    if (t.global_shape[d] < 0 || t.start[d] < 0 || t.count[d] < 0 || t.start[d] + t.count[d] > t.global_shape[d])
      throw Error(what + "hyperslab start " + shape_str(t.start) + " count " + shape_str(t.count) +
                  " lies outside the global shape " + shape_str(t.global_shape));
  if (t.flat_end >= 0 && (t.flat_begin < 0 || t.flat_begin > t.flat_end || t.flat_end > num_elements(t.count)))
    throw Error(what + "flat range [" + std::to_string(t.flat_begin) + ", " + std::to_string(t.flat_end) +
                ") lies outside the hyperslab's " + std::to_string(num_elements(t.count)) + " elements");
  if (!t.data && shard_elements(t) > 0) throw Error(what + "no data buffer");
}

bool disjoint(const Box& a, const Box& b) {
  for (size_t d = 0; d < a.start.size(); ++d)
    if (a.start[d] + a.count[d] <= b.start[d] || b.start[d] + b.count[d] <= a.start[d]) return true;
  return false;
}

void check_tiling(TableEntry& e) {
  int64_t covered = 0;
  for (const Box& b : e.writer_boxes) covered += num_elements(b.count);
  const int64_t n = num_elements(e.global_shape);
  e.tiled = covered == n;
  if (!e.tiled) {
    e.tiling_problem = "writer hyperslabs cover " + std::to_string(covered) + " of " + std::to_string(n) + " elements";
    return;
  }
  // Equal volume and pairwise disjoint means every element is covered exactly once.
  for (size_t i = 0; i < e.writer_boxes.size() && e.tiled; ++i)
    for (size_t j = i + 1; j < e.writer_boxes.size(); ++j)
      if (num_elements(e.writer_boxes[i].count) > 0 && num_elements(e.writer_boxes[j].count) > 0 &&
          !disjoint(e.writer_boxes[i], e.writer_boxes[j])) {
        e.tiled = false;
        e.tiling_problem = "writer hyperslabs overlap (" + shape_str(e.writer_boxes[i].start) + " and " +
                           shape_str(e.writer_boxes[j].start) + ")";
        break;
      }
}

}  // namespace

std::vector<TableEntry> gather_shard_table(MPI_Comm comm, const std::vector<TensorShard>& tensors) {
  int rank = 0, size = 1;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &size);
  std::vector<int64_t> mine;
  run_agreed(comm, [&] {
    std::map<std::string, int> seen;
    for (const TensorShard& t : tensors) {
      check_shard(t);
      if (!seen.emplace(t.name, 0).second) throw Error("tensor '" + t.name + "' appears twice in the list");
      encode(t, mine);
    }
  });

  int n = static_cast<int>(mine.size());
  std::vector<int> counts(size), displs(size, 0);
  MPI_Allgather(&n, 1, MPI_INT, counts.data(), 1, MPI_INT, comm);
  for (int r = 1; r < size; ++r) displs[r] = displs[r - 1] + counts[r - 1];
  std::vector<int64_t> all(displs[size - 1] + counts[size - 1]);
  MPI_Allgatherv(mine.data(), n, MPI_INT64_T, all.data(), counts.data(), displs.data(), MPI_INT64_T, comm);

  // Decode identically on every rank, so every check below gives the same answer everywhere.
  std::map<std::string, TableEntry> by_name;
  for (int r = 0; r < size; ++r) {
    size_t p = displs[r];
    const size_t end = p + counts[r];
    int local_index = 0;
    while (p < end) {
      const size_t len = all[p++];
      std::string name(len, '\0');
      for (size_t i = 0; i < len; i += 8, ++p) std::memcpy(name.data() + i, &all[p], std::min<size_t>(8, len - i));
      const size_t nd = all[p++];
      std::vector<int64_t> shape(&all[p], &all[p] + nd), start(&all[p + nd], &all[p + 2 * nd]),
          count(&all[p + 2 * nd], &all[p + 3 * nd]);
      p += 3 * nd;
      TensorShard piece;  // the geometry only, to cut it into boxes
      piece.global_shape = shape;
      piece.start = start;
      piece.count = count;
      piece.writer = all[p++] != 0;
      piece.flat_begin = all[p++];
      piece.flat_end = all[p++];
      auto [it, inserted] = by_name.try_emplace(name);
      TableEntry& e = it->second;
      if (inserted) {
        e.name = name;
        e.global_shape = shape;
      } else if (e.global_shape != shape) {
        throw Error("tensor '" + name + "': ranks disagree on the global shape: " + shape_str(e.global_shape) +
                    " vs " + shape_str(shape) + " (rank " + std::to_string(r) + ")");
      }
      if (r == rank) e.local = local_index;
      if (piece.writer)
        for (Box& b : shard_boxes(piece)) e.writer_boxes.push_back(std::move(b));
      ++local_index;
    }
  }
  std::vector<TableEntry> table;
  for (auto& [name, e] : by_name) {
    check_tiling(e);
    table.push_back(std::move(e));
  }
  return table;
}

}  // namespace gt::io
