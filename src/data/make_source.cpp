// make_data_source: the one place that turns data.* of the config into a DataSource.
#include "src/core/config.hpp"
#include "src/core/error.hpp"
#include "src/data/data_source.hpp"
#include "src/data/hdf5_source.hpp"

namespace gt {

std::unique_ptr<DataSource> make_data_source(const Config& cfg) {
  const DataConfig& d = cfg.data;
  if (cfg.choices().data_source == DataSourceKind::Synthetic)  // throws naming data.source for another name
    return std::make_unique<SyntheticSource>(cfg.model.vocab_size, cfg.model.seq_len, uint64_t(cfg.train.seed),
                                             d.synthetic_noise);
  if (d.path.empty()) throw Error("data.path: empty; set data.path=FILE.h5 (make one with gridtrain prepare)");
  auto src = std::make_unique<HDF5Source>(d.path, cfg.model.seq_len, uint64_t(cfg.train.seed));
  if (src->vocab_size() > cfg.model.vocab_size)
    throw Error(d.path + ": the dataset's vocab_size " + std::to_string(src->vocab_size()) +
                " is larger than model.vocab_size " + std::to_string(cfg.model.vocab_size));
  if (src->samples_per_epoch(Split::Train) < 1)
    throw Error(d.path + ": the train split holds " + std::to_string(src->info().tokens[0]) +
                " tokens, fewer than one sequence of model.seq_len + 1 = " + std::to_string(cfg.model.seq_len + 1));
  return src;
}

}  // namespace gt
